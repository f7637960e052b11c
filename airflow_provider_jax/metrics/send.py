"""Sends the metrics of ``metrics.names`` through Airflow's own ``Stats``, so they go where the
deployment's ``[metrics]`` sends Airflow's (StatsD, Datadog, OpenTelemetry), or nowhere.

A task's worker and the triggerer each set up their own ``Stats`` (the Task SDK's and Airflow
core's): job metrics go through the worker's, the triggerer's through the triggerer's. A
metric is never worth failing a task or a trigger for: a send that raises is logged and
dropped.
"""

from __future__ import annotations

import functools
import logging
import socket
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax import settings
from airflow_provider_jax.metrics.names import PREFIX_SETTING, check_prefix, full_name

log = logging.getLogger(__name__)
WORKER, TRIGGERER = "worker", "triggerer"


def configured_prefix() -> str:
    """``[jax] metrics_prefix``, checked (with the whole ``[jax]`` section)."""
    return check_prefix(settings.get(PREFIX_SETTING))


def _stats(where: str) -> Any:
    if where == TRIGGERER:
        try:
            from airflow.observability import stats as triggerer_stats  # the triggerer's
        except ImportError:  # a Task SDK without Airflow core
            pass
        else:
            return triggerer_stats
    from airflow.sdk.observability import stats

    return stats


def _send(where: str, kind: str, name: str, value: float, tags: Mapping[str, Any]) -> None:
    try:
        stats = _stats(where)
        if kind == "incr":
            stats.incr(name, count=value, tags=dict(tags))
        elif kind == "gauge":
            stats.gauge(name, value, tags=dict(tags))
        else:
            stats.timing(name, value, tags=dict(tags))
    except Exception as err:
        log.warning("metric %s not sent: %s", name, err)


def send_job(ledger: Mapping[str, Any], hosts: int, tags: Mapping[str, str]) -> None:
    """A finished try's metrics, from its goodput ledger (``reporting.goodput``).

    :param ledger: the try's goodput ledger.
    :param hosts: the JobSet's hosts, every slice's (host-seconds lost count each).
    :param tags: ``dag_id``, ``task_id`` and ``accelerator``.
    """
    prefix = configured_prefix()
    for name, seconds in (("job.queue_wait", "queued_s"), ("job.startup", "startup_s")):
        _send(WORKER, "timing", full_name(prefix, name), ledger[seconds] * 1000, tags)
    for cause, count in (ledger.get("restarts") or {}).items():
        _send(WORKER, "incr", full_name(prefix, "job.restarts.<cause>", cause), count, tags)
    _send(WORKER, "gauge", full_name(prefix, "job.goodput"), ledger["goodput"], tags)
    for slices, seconds in (ledger.get("by_slices") or {}).items():
        name = full_name(prefix, "job.time_at_slices.<slices>", slices)
        _send(WORKER, "timing", name, seconds * 1000, tags)
    lost = round(ledger["lost_s"] * hosts)
    _send(WORKER, "incr", full_name(prefix, "job.host_seconds_lost"), lost, tags)


def count_triggerer(name: str) -> None:
    """One more of counter ``name`` (``triggerer.watch_relists``)."""
    _send(TRIGGERER, "incr", full_name(configured_prefix(), name), 1, _host())


class LiveCount:
    """A number of things alive in this triggerer (triggers, streams), sent as a gauge on
    every change.

    :param name: the gauge's name in ``metrics.names``.
    """

    def __init__(self, name: str) -> None:
        self.name, self.value = name, 0

    def add(self, delta: int) -> None:
        self.value += delta
        _send(TRIGGERER, "gauge", full_name(configured_prefix(), self.name), self.value, _host())


@functools.cache
def _host() -> dict[str, str]:
    """A triggerer's tag: its gauges would overwrite each other's without one."""
    return {"hostname": socket.gethostname()}


WAITING_JOBSETS = LiveCount("triggerer.waiting_jobsets")
LOG_STREAMS = LiveCount("triggerer.log_streams")
