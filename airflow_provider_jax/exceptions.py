"""Errors a JAX job raises in Airflow, shared by the local and Kubernetes backends."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass

from airflow.sdk.exceptions import AirflowException

from airflow_provider_jax.runtime.messages import parse_message

TRACEBACK_LINES = 40


@dataclass(frozen=True)
class ProcessFailure:
    """Why one JAX process (one pod) failed: its ``[slice/host]`` tag, the error, and the
    tail of its traceback (or of its log, when it died without a word). ``log_tail``, when
    set, adds its last log lines after a traceback (pods' logs are not in the task log)."""

    tag: str
    error: str
    traceback: str = ""
    log_tail: str = ""

    @classmethod
    def from_exit(
        cls, tag: str, termination_message: str | None, exit_code: int, log_tail: str = ""
    ) -> ProcessFailure:
        """From what the process left behind: its failure message if it wrote one, else its
        exit code and the tail of its log."""
        body = parse_message(termination_message)
        if body is not None and not body["ok"]:
            return cls(tag, str(body.get("error", "")), str(body.get("traceback", "")))
        return cls(tag, describe_exit(exit_code), log_tail)

    def render(self) -> str:
        tail = self.traceback.rstrip().splitlines()[-TRACEBACK_LINES:]
        lines = [f"{self.tag} {self.error}", *(f"    {line}" for line in tail)]
        if log := self.log_tail.rstrip().splitlines()[-TRACEBACK_LINES:]:
            lines += ["  last lines of its log:", *(f"    {line}" for line in log)]
        return "\n".join(lines)


def describe_exit(exit_code: int) -> str:
    """``exited with code 3``, or ``killed by SIGKILL`` for a negative (local) exit code."""
    if exit_code < 0:
        try:
            return f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    return f"exited with code {exit_code}"


class JaxJobFailed(AirflowException):
    """A JAX job failed. The message names every failed process and its traceback tail."""

    def __init__(self, summary: str, failures: Sequence[ProcessFailure] = ()) -> None:
        self.summary = summary
        self.failures = tuple(failures)
        super().__init__("\n".join([summary, *(f.render() for f in self.failures)]))


class JobSetConflict(AirflowException):
    """A JobSet of the task instance's name exists but was not made for it."""
