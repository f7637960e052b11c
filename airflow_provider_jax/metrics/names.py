"""Every metric the provider sends, declared once: the docs' list is checked against this.

Each name goes under one prefix, ``[jax] metrics_prefix`` (default ``jax``), itself under
Airflow's own (``[metrics] statsd_prefix``): ``airflow.jax.job.goodput``. Pure: no Airflow
import, so the operators check the setting at parse for nothing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_PREFIX = "jax"
PREFIX_SETTING = "metrics_prefix"  # [jax] metrics_prefix
_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")  # StatsD's, dot-separated
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


def check_settings(keys: Iterable[str]) -> None:
    """A ``[jax]`` key that looks like the prefix setting but is not it would leave the
    prefix at its default without a word: refused, with the right name."""
    for key in keys:
        if key != PREFIX_SETTING and difflib.get_close_matches(key, [PREFIX_SETTING], 1, 0.8):
            raise ValueError(
                f"[jax] {key} is not a setting: did you mean [jax] {PREFIX_SETTING}? (The "
                "metrics would go under the default prefix.)"
            )


def full_name(prefix: str, name: str, cause: str | None = None) -> str:
    """``<prefix>.<name>``, a restart's cause in place of ``<cause>`` (as a StatsD part)."""
    if cause is not None:
        name = name.replace("<cause>", re.sub(r"[^A-Za-z0-9_-]+", "_", cause.strip()))
    return f"{prefix}.{name}"
