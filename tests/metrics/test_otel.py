"""The metrics as a real OpenTelemetry Collector receives them over OTLP (harness/otel_collector.py,
built from the collector's pinned Go modules), through Airflow's own Stats with its OTel logger
on (``[metrics] otel_on``): a try's job metrics, with their names and attributes. StatsD stays
as it is (tests/metrics/test_send.py)."""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from airflow_provider_jax.metrics import send
from harness.otel_collector import Collector
from tests.metrics.test_send import LEDGER, TAGS


def eventually(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    """Wait for a state (``check`` truthy), not for a time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout}s: {what}")


@pytest.fixture
def otel(monkeypatch, tmp_path) -> Iterator[Collector]:
    """The worker's Stats as Airflow sets it up with OTel metrics on, exporting to a
    collector; reset (and its exporter shut down) after."""
    from airflow.sdk._shared.observability.metrics import otel_logger
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics import stats_utils
    from opentelemetry import metrics

    collector = Collector(tmp_path).start()
    for key, value in {
        "AIRFLOW__METRICS__STATSD_ON": "False",
        "AIRFLOW__METRICS__OTEL_ON": "True",
        "AIRFLOW__METRICS__OTEL_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__OTEL_PORT": str(collector.port),
        "AIRFLOW__METRICS__OTEL_INTERVAL_MILLISECONDS": "200",
        "AIRFLOW__JAX__METRICS_PREFIX": "ml.jax",
    }.items():
        monkeypatch.setenv(key, value)
    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    yield collector
    # Made on first use, with a flush at exit (a worker's last metrics): this process is no
    # worker, so its exporting thread stops here, before the collector does.
    atexit.unregister(otel_logger.flush_otel_metrics)
    metrics.get_meter_provider().shutdown()  # type: ignore[attr-defined]
    monkeypatch.setenv("AIRFLOW__METRICS__OTEL_ON", "False")
    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    collector.stop()


def test_a_tries_job_metrics_arrive_with_their_names_and_attributes(otel):
    send.send_job(LEDGER, hosts=4, tags=TAGS)
    job = "airflow.ml.jax.job"
    names = {f"{job}.{n}" for n in ("queue_wait", "startup", "restarts.lost_peer",
                                    "restarts.hang", "goodput", "host_seconds_lost")}  # fmt: skip
    received = eventually(
        f"{sorted(names)} at the collector",
        lambda: (found := otel.metrics()) and names <= set(found) and found,
    )
    for name in names:
        for point in received[name]:
            assert point["attributes"] == TAGS, (name, point)
    assert received[f"{job}.goodput"][-1]["asDouble"] == 0.7
    assert int(received[f"{job}.host_seconds_lost"][-1]["asInt"]) == 38
    assert int(received[f"{job}.restarts.hang"][-1]["asInt"]) == 2
    wait = received[f"{job}.queue_wait"][-1]
    assert (wait["kind"], wait["count"], wait["sum"]) == ("exponentialHistogram", "1", 12500)
