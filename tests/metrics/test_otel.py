"""The metrics and spans as a real OpenTelemetry Collector receives them over OTLP
(harness/otel_collector.py, built from the collector's pinned Go modules): a try's job
metrics through Airflow's own Stats with its OTel logger on (``[metrics] otel_on``), with
their names and attributes; and its phases as spans under its own, with Airflow's tracing
set up as the task runner sets it (``[traces] otel_on``). StatsD stays as it is
(tests/metrics/test_send.py)."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_jax.metrics import send
from harness.otel_collector import Collector
from tests.support.goodput_ledger import LEDGER, TAGS
from tests.support.waiting import eventually


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


SPAN_SCRIPT = """
import json, sys
from opentelemetry import trace
from airflow.sdk._shared.observability.traces import configure_otel
from airflow.sdk.configuration import conf
from airflow_provider_jax.metrics.spans import send_phases

configure_otel(conf)  # as the task runner's process sets tracing up
tracer = trace.get_tracer("airflow.sdk.execution_time.task_runner")
with tracer.start_as_current_span("worker.train") as task:  # the try's own span
    sent = send_phases(json.loads(sys.argv[1]), json.loads(sys.argv[2]))
provider = trace.get_tracer_provider()
if hasattr(provider, "force_flush"):  # as the task runner flushes at its end
    provider.force_flush()
context = task.get_span_context()
print(json.dumps({"sent": sent, "trace": format(context.trace_id, "032x"),
                  "span": format(context.span_id, "016x")}))
"""
PHASES = [
    {"phase": "queued", "attempt": None, "start": 1000.0, "end": 1010.0},
    {"phase": "startup", "attempt": 0, "start": 1010.0, "end": 1021.0},
    {"phase": "productive", "attempt": 0, "start": 1021.0, "end": 1040.0},
    {"phase": "lost", "attempt": 0, "start": 1040.0, "end": 1070.0},
    {"phase": "startup", "attempt": 1, "start": 1070.0, "end": 1080.0},
    {"phase": "productive", "attempt": 1, "start": 1080.0, "end": 1090.5},
]


def traced(collector: Collector | None) -> dict[str, Any]:
    """Run SPAN_SCRIPT in a process of its own (OpenTelemetry's tracer is set once per
    process), with Airflow's tracing on towards ``collector``, or off without one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AIRFLOW__TRACES"))}
    if collector is not None:
        env |= {
            "AIRFLOW__TRACES__OTEL_ON": "True",
            "OTEL_TRACES_EXPORTER": "otlp_proto_http",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{collector.port}/v1/traces",
        }
    ran = subprocess.run(
        [sys.executable, "-c", SPAN_SCRIPT, json.dumps({**LEDGER, "phases": PHASES}),
         json.dumps(TAGS)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.splitlines()[-1])


def test_a_tries_phases_are_spans_under_its_own(tmp_path):
    collector = Collector(tmp_path).start()
    try:
        task = traced(collector)
        assert task["sent"] == len(PHASES)
        received = eventually(
            "the task's span and its phases at the collector",
            lambda: len(spans := collector.spans()) == len(PHASES) + 1 and spans,
        )
    finally:
        collector.stop()
    ours = sorted((s for s in received if s["name"].startswith("jax.")),
                  key=lambda s: int(s["startTimeUnixNano"]))  # fmt: skip
    for span, phase in zip(ours, PHASES, strict=True):
        assert span["name"] == f"jax.{phase['phase']}"
        assert (span["traceId"], span["parentSpanId"]) == (task["trace"], task["span"])
        assert int(span["startTimeUnixNano"]) == int(phase["start"] * 1e9)
        assert int(span["endTimeUnixNano"]) == int(phase["end"] * 1e9)
        attempt = {} if phase["attempt"] is None else {"jax.attempt": str(phase["attempt"])}
        assert span["attributes"] == {**TAGS, **attempt}


def test_without_airflows_tracing_no_span_is_made():
    assert traced(None)["sent"] == 0
