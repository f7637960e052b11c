"""Errors the provider raises, importable without loading any heavy library."""

from __future__ import annotations

from airflow.sdk.exceptions import AirflowException


class JobSetFailed(AirflowException):
    """A JobSet ended without success; the message names its conditions and restarts and,
    for each failed host, ``[slice/host]``, the traceback tail and a log tail."""


class JobSetConflict(AirflowException):
    """A JobSet of the task instance's name exists but was not made for it."""
