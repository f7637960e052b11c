"""Deadlines the job's own ETA says it will miss, told before they pass.

Airflow's ``DeadlineAlert`` fires its callback once a deadline has passed and the DAG run is
still going. A training run knows much earlier: its ETA (``progress.py``) is live from the
leader's reports. Each deadline here is plain data, evaluated by the operator when the try
starts (``operators/deadline_alerts.py``); the first time the predicted finish passes it, the
task log says so and the alert's own callback runs, with the context Airflow gives it plus the
prediction. Airflow's scheduler still fires the same callback if the deadline itself passes.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import importlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_jax.reporting.progress import Progress, eta_text


@dataclass(frozen=True)
class Deadline:
    """One evaluated deadline.

    :param at: when the run must be done, epoch seconds.
    :param says: how it was reached, for the log (``the DAG run's logical date + 2:00:00``).
    :param callback: the dotted path of the alert's callback.
    :param kwargs: the callback's own kwargs.
    :param name: the alert's name, if it has one.
    :param dag_run: the run, as the callback's ``context["dag_run"]`` (JSON values).
    """

    at: float
    says: str
    callback: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    dag_run: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Deadline:
        return cls(**row)

    def as_row(self) -> dict[str, Any]:
        """Plain JSON values: a trigger's kwargs carry it."""
        return asdict(self)

    def miss_line(self, finish: float, now: float) -> str:
        """What the task log says when the predicted finish passes the deadline."""
        title = f"deadline {self.name!r}" if self.name else "the deadline"
        return (
            f"At this rate the job finishes at {_iso(finish)} (ETA {eta_text(finish - now)}), "
            f"{eta_text(finish - self.at)} past {title} at {_iso(self.at)} ({self.says}): "
            f"running its callback {self.callback} now, before the deadline passes."
        )

    def run_callback(self, finish: float, step: int | None, total: int | None) -> None:
        """Call the alert's callback as Airflow would (its kwargs and a ``context``), with the
        prediction in ``context["deadline"]``. An async callback runs to its end here: call
        this where no event loop runs (a thread of the trigger's, the worker's reader)."""
        context = {
            "dag_run": dict(self.dag_run),
            "deadline": {"id": None, "deadline_time": _iso(self.at), "predicted": True,
                         "predicted_finish": _iso(finish), "step": step, "total_steps": total},
        }  # fmt: skip
        result = _import(self.callback)(**self.kwargs, context=context)
        if inspect.isawaitable(result):
            asyncio.run(_awaited(result))


class DeadlineWatch:
    """Each deadline once: which ones a predicted finish passes for the first time."""

    def __init__(self, deadlines: Iterable[Deadline]) -> None:
        self.pending = sorted(deadlines, key=lambda d: d.at)

    def passed_by(self, finish: float | None) -> list[Deadline]:
        if finish is None:
            return []
        missed = [d for d in self.pending if finish > d.at]
        self.pending = [d for d in self.pending if d not in missed]
        return missed

    def check(self, progress: Progress, log: Any, now: float) -> list[Callable[[], None]]:
        """Say in ``log`` each deadline that the ETA passes for the first time, and return
        their callbacks, for the caller to run where blocking is allowed."""
        if not self.pending:
            return []
        finish = progress.finish_at()
        calls: list[Callable[[], None]] = []
        for deadline in self.passed_by(finish):
            assert finish is not None
            log.warning("%s", deadline.miss_line(finish, now))
            calls.append(
                functools.partial(_call, deadline, finish, progress.step, progress.total, log)
            )
        return calls


def _call(deadline: Deadline, finish: float, step: int | None, total: int | None, log: Any) -> None:
    """The callback, its failure logged: it must not end the wait on the job."""
    try:
        deadline.run_callback(finish, step, total)
    except Exception:
        log.exception("The deadline callback %s failed.", deadline.callback)


async def _awaited(result: Any) -> Any:
    return await result


def _import(path: str) -> Any:
    """The callable at ``module.attribute`` (Airflow's callbacks are top-level callables)."""
    module, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def _iso(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat(timespec="seconds")
