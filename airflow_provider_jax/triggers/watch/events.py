"""The one event a :class:`~airflow_provider_jax.triggers.jobset.JobSetTrigger` fires.

It crosses a process boundary (triggerer → database → worker), so it travels as a plain dict;
this type is its single definition, used by the trigger, both backends and the tests.
``from_dict`` reads events written by earlier releases too: a task deferred before an upgrade
resumes after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

SUCCESS, FAILED, TIMEOUT, ERROR = "success", "failed", "timeout", "error"
RESIZE = "resize"  # an elastic job (min_slices) changes size: the trigger deleted the JobSet
OUTCOMES = (SUCCESS, FAILED, TIMEOUT, ERROR, RESIZE)


@dataclass(frozen=True)
class JobSetEvent:
    """How JobSet ``namespace/name`` (``uid``) ended, as the trigger saw it.

    :param status: ``success``, ``failed``, ``timeout`` (the task's deadline passed; the
        trigger already deleted the JobSet), ``error`` (the API could not be used) or
        ``resize`` (an elastic job goes on at ``slices``; the trigger deleted the JobSet).
    :param name: the JobSet's name.
    :param namespace: its namespace.
    :param uid: its uid: what the worker reads and deletes is that object, never a successor.
    :param reason: a short CamelCase cause (``Completed``, ``FailedJobs``, ``Deleted``, ...).
    :param message: one human sentence.
    :param jobset: the status summary (conditions, restarts) when the JobSet was seen.
    :param restarts: one line per restart the trigger saw (attempt, class, host, reason).
    :param goodput: the run's goodput ledger (``goodput.py``), as far as the trigger saw it.
    :param leader_message: the leader's termination message, read by the trigger where the
        worker will not keep the pod (a MultiKueue worker cluster).
    :param slices: with ``resize``, the size the job goes on at.
    """

    status: str
    name: str
    namespace: str
    uid: str
    reason: str
    message: str
    jobset: dict[str, Any] | None = None
    restarts: list[str] = field(default_factory=list)
    goodput: dict[str, Any] | None = None
    leader_message: str | None = None
    slices: int | None = None

    def __post_init__(self) -> None:
        if self.status not in OUTCOMES:
            raise ValueError(f"unknown JobSet event status {self.status!r}; one of {OUTCOMES}")

    def to_dict(self) -> dict[str, Any]:
        # Shallow: its values are already plain data, and asdict's deep copy of the status
        # summary was a measurable share of a triggerer's CPU when a thousand jobs end.
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSetEvent:
        """From a serialized event, of this release or an earlier one (unknown keys are
        ignored; ``uid``, ``reason``, ``jobset``, ``restarts`` and ``goodput`` may be missing)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("uid", "")
        values.setdefault("reason", str(data.get("status", "")).capitalize())
        values.setdefault("message", "")
        return cls(**values)

    @property
    def where(self) -> str:
        return f"JobSet {self.namespace}/{self.name}"
