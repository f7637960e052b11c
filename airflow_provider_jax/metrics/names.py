"""Every metric the provider sends, declared once: the docs' list is checked against this.

Each name goes under one prefix, ``[jax] metrics_prefix`` (default ``jax``), itself under
Airflow's own (``[metrics] statsd_prefix``): ``airflow.jax.job.goodput``. Pure: no Airflow
import, so the operators check the setting at parse for nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow_provider_jax.settings import SETTINGS, STATSD_NAME

PREFIX_SETTING = "metrics_prefix"  # [jax] metrics_prefix
DEFAULT_PREFIX = SETTINGS[PREFIX_SETTING].default
_NAME = STATSD_NAME
COUNTER, GAUGE, TIMER = "counter", "gauge", "timer"


@dataclass(frozen=True)
class Metric:
    """One metric: its name below the prefix, its kind, its tags and what it measures."""

    name: str
    kind: str
    tags: tuple[str, ...]
    what: str


JOB_TAGS = ("dag_id", "task_id", "accelerator")
HOST = ("hostname",)
METRICS = (
    Metric("job.queue_wait", TIMER, JOB_TAGS, "creating the JobSet to every pod running"),
    Metric("job.startup", TIMER, JOB_TAGS, "pods running to the first report(), all attempts"),
    Metric(
        "job.restarts.<cause>",
        COUNTER,
        JOB_TAGS,
        "whole-slice restarts by cause: lost_peer, hang, disruption, code_error",
    ),
    Metric("job.goodput", GAUGE, JOB_TAGS, "productive time / wall time of the try, 0 to 1"),
    Metric(
        "job.host_seconds_lost",
        COUNTER,
        JOB_TAGS,
        "hosts x seconds of work redone or waited for after failures",
    ),
    Metric(
        "job.time_at_slices.<slices>",
        TIMER,
        JOB_TAGS,
        "an elastic job's (min_slices) wall time at each size, by its slice count",
    ),
    Metric("triggerer.waiting_jobsets", GAUGE, HOST, "JobSet triggers running in this triggerer"),
    Metric("triggerer.watch_relists", COUNTER, HOST, "lists of JobSets the shared watch made"),
    Metric("triggerer.log_streams", GAUGE, HOST, "pod log streams open in this triggerer"),
)
NAMES = frozenset(m.name for m in METRICS)


def check_prefix(value: object) -> str:
    """``value`` as a prefix, or a ValueError naming the setting."""
    if isinstance(value, str) and _NAME.fullmatch(value):
        return value
    raise ValueError(
        f"[jax] {PREFIX_SETTING} must be a StatsD name: letters, digits, '_' and '-' in parts "
        f"separated by single dots (default {DEFAULT_PREFIX!r}), got {value!r}."
    )


def full_name(prefix: str, name: str, cause: str | None = None) -> str:
    """``<prefix>.<name>``, a value (a restart's cause, a slice count) in place of its
    ``<placeholder>`` (as a StatsD part)."""
    if cause is not None:
        part = re.sub(r"[^A-Za-z0-9_-]+", "_", cause.strip())
        name = re.sub(r"<[a-z]+>", lambda _: part, name)
    return f"{prefix}.{name}"
