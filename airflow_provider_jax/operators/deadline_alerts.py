"""Airflow's ``DeadlineAlert``s, the DAG's and the task's own ``deadline=``, evaluated in the
worker when a try starts, so that the job's live ETA is held against them
(``reporting/deadlines.py``) and a run that will be late says so while it runs.

Airflow evaluates a DAG's deadlines in the scheduler, from the metadata database, and fires the
callback once the time has passed. The worker has no database: it evaluates the references it
can read from the run itself. ``DAGRUN_QUEUED_AT`` is read as the run's ``run_after`` (the
worker is not told when the run was queued; a run is queued at its ``run_after`` or later, so
the deadline is never later than Airflow's). ``AVERAGE_RUNTIME`` and custom references need the
database: a DAG's are left to Airflow alone (the log says so), and the task's are refused at
parse.

A task's ``deadline=`` is never serialized by Airflow, so nothing of Airflow's checks it: each
alert goes through Airflow's own round trip (``ensure_serialized_deadline_alert``, what a
DAG's alerts go through when the DAG is serialized) at parse, and what it makes of the alert
(an interval in seconds as a ``timedelta``, a naive datetime in UTC) is what the worker
evaluates. Its callback's kwargs travel to the trigger: they must be JSON.
"""

from __future__ import annotations

import datetime
import enum
import json
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_jax.arguments import MAX_DURATION
from airflow_provider_jax.reporting.deadlines import Deadline

VALID = "a DeadlineAlert (airflow.sdk) or a non-empty list of them, each a different alert"


def check_alerts(name: str, value: object) -> tuple[Any, ...]:
    """The task's alerts as a tuple, or an error at parse that names ``name``."""
    from airflow.sdk.definitions.deadline import DeadlineAlert

    alerts = (value,) if isinstance(value, DeadlineAlert) else value
    if (
        not isinstance(alerts, list | tuple)
        or not alerts
        or not all(isinstance(a, DeadlineAlert) for a in alerts)
    ):
        raise TypeError(f"{name} must be {VALID}, got {value!r}.")
    if any(alert == earlier for i, alert in enumerate(alerts) for earlier in alerts[:i]):
        raise ValueError(  # by ==: a callback's kwargs may hold lists, which do not hash
            f"{name} must be {VALID}; it names one alert twice (the same reference, interval "
            "and callback)."
        )
    for alert in alerts:
        if (why := _not_in_worker(alert.reference)) is not None:
            raise ValueError(
                f"{name}: {type(alert.reference).__name__} {why}; the task's deadline can be "
                "DeadlineReference.DAGRUN_LOGICAL_DATE, DAGRUN_QUEUED_AT or FIXED_DATETIME(...). "
                "Put it on the DAG's deadline=, where Airflow evaluates it."
            )
        _check_as_airflow_does(name, alert)
    return tuple(alerts)


def _check_as_airflow_does(name: str, alert: Any) -> None:
    """Airflow's own serialization of ``alert``, then what it can't see: an interval or a time
    past what a date sum holds, and callback kwargs the trigger can't carry."""
    title = f"{name} {alert.name or alert.callback.path!r}"
    try:
        serialized = _serialized(alert)
    except Exception as err:
        raise ValueError(
            f"{title}: Airflow can't serialize it ({type(err).__name__}: {err}); a "
            "DeadlineAlert's reference is a DeadlineReference (FIXED_DATETIME takes a "
            "datetime) and its interval a timedelta or a VariableInterval."
        ) from None
    interval = serialized.interval
    if isinstance(interval, datetime.timedelta) and abs(interval) > MAX_DURATION:
        raise ValueError(
            f"{title}: its interval {interval} is longer than {MAX_DURATION.days} days; no "
            "run's deadline can be that far from its reference."
        )
    at = getattr(serialized.reference, "_datetime", None)
    if at is not None and isinstance(interval, datetime.timedelta):
        try:
            at + interval
        except OverflowError:
            raise ValueError(f"{title}: {at} + {interval} is past any date.") from None
    try:
        json.dumps(alert.callback.kwargs or {}, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{title}: its callback's kwargs must be JSON (they travel to the trigger): {err}."
        ) from None


def _serialized(alert: Any) -> Any:
    """The alert as Airflow serializes it: its interval and fixed time, normalized."""
    from airflow.serialization.encoders import ensure_serialized_deadline_alert

    return ensure_serialized_deadline_alert(alert)


def evaluate(alerts: Iterable[Any], dag_run: Any, log: Any) -> tuple[dict[str, Any], ...]:
    """The deadline rows of ``alerts`` for this run; those the worker cannot evaluate are
    left to Airflow, and the log says so once.

    :param alerts: the DAG's alerts, then the task's.
    :param dag_run: the run (``context["dag_run"]``).
    :param log: where to say what is left to Airflow.
    """
    rows = []
    for alert in alerts:
        title = alert.name or alert.callback.path
        if (why := _not_in_worker(alert.reference)) is not None:
            log.info(
                "Deadline %s: %s %s; Airflow alone fires its callback, once it has passed.",
                title,
                type(alert.reference).__name__,
                why,
            )
            continue
        serialized = _serialized(alert)
        base, says = _reference(alert.reference, serialized.reference, dag_run)
        if base is None:
            log.info("Deadline %s: this run has no %s.", title, says)
            continue
        try:
            interval = _interval(serialized.interval)
        except Exception as err:  # a VariableInterval's Variable missing or not whole seconds
            log.warning("Deadline %s is not held against the ETA: %s", title, err)
            continue
        sign = "+" if interval >= datetime.timedelta(0) else "-"
        deadline = Deadline(
            at=(base + interval).timestamp(),
            says=f"{says} {sign} {abs(interval)}",
            callback=alert.callback.path,
            kwargs=dict(alert.callback.kwargs or {}),
            name=alert.name,
            dag_run=_run_json(dag_run),
        )
        rows.append(deadline.as_row())
    return tuple(rows)


def _not_in_worker(reference: Any) -> str | None:
    from airflow.sdk.definitions.deadline import (
        DagRunLogicalDateDeadline,
        DagRunQueuedAtDeadline,
        FixedDatetimeDeadline,
    )

    known = (DagRunLogicalDateDeadline, DagRunQueuedAtDeadline, FixedDatetimeDeadline)
    if isinstance(reference, known):
        return None
    return "is evaluated from the metadata database, which the worker cannot read"


def _reference(
    reference: Any, serialized: Any, dag_run: Any
) -> tuple[datetime.datetime | None, str]:
    from airflow.sdk.definitions.deadline import DagRunLogicalDateDeadline, FixedDatetimeDeadline

    if isinstance(reference, FixedDatetimeDeadline):  # Airflow's, a naive one taken as UTC
        return serialized._datetime, "a fixed time"
    if isinstance(reference, DagRunLogicalDateDeadline):
        return dag_run.logical_date, "the DAG run's logical date"
    return dag_run.run_after, "the DAG run's run_after (DAGRUN_QUEUED_AT)"


def _interval(interval: Any) -> datetime.timedelta:
    """A timedelta as it is, or a VariableInterval's Variable in seconds (within range)."""
    if isinstance(interval, datetime.timedelta):
        return interval
    from airflow.sdk import Variable

    seconds = int(Variable.get(interval.key))
    if abs(seconds) > MAX_DURATION.total_seconds():
        raise ValueError(f"Variable {interval.key!r} holds {seconds} s, past {MAX_DURATION}")
    return datetime.timedelta(seconds=seconds)


def _run_json(dag_run: Any) -> dict[str, Any]:
    """What the callback's ``context["dag_run"]`` holds: the run's identity and times."""
    fields = ("dag_id", "run_id", "logical_date", "run_after", "start_date", "run_type", "conf")
    values: Mapping[str, Any] = {f: getattr(dag_run, f, None) for f in fields}
    return {k: _json(v) for k, v in values.items()}


def _json(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    return value
