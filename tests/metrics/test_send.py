"""The metrics as StatsD receives them, through Airflow's own Stats (its real StatsD logger
sending to a UDP socket): a try's job metrics and a triggerer's, and the prefix setting."""

from __future__ import annotations

import pytest

from airflow_provider_jax.metrics import send
from airflow_provider_jax.metrics.names import check_prefix
from tests.support.goodput_ledger import LEDGER, TAGS
from tests.support.statsd_listener import StatsdListener


@pytest.fixture
def statsd(monkeypatch):
    """Airflow's Stats, worker's and triggerer's, set up as Airflow sets them up, sending
    to a listener; reset after."""
    from airflow.observability import stats as core_stats
    from airflow.observability.metrics import stats_utils as core_utils
    from airflow.sdk.observability import stats as sdk_stats
    from airflow.sdk.observability.metrics import stats_utils as sdk_utils

    listener = StatsdListener()
    for key, value in listener.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AIRFLOW__JAX__METRICS_PREFIX", "ml.jax")
    sdk_stats.initialize(factory=sdk_utils.get_stats_factory(), export_legacy_names=False)
    core_stats.initialize(factory=core_utils.get_stats_factory(), export_legacy_names=False)
    yield listener
    for stats, utils in ((sdk_stats, sdk_utils), (core_stats, core_utils)):
        monkeypatch.setenv("AIRFLOW__METRICS__STATSD_ON", "False")
        stats.initialize(factory=utils.get_stats_factory(), export_legacy_names=False)
    listener.close()


def test_a_tries_job_metrics_under_the_prefix(statsd):
    send.send_job(LEDGER, hosts=4, tags=TAGS)
    job = "airflow.ml.jax.job"
    assert statsd.wait_for(lambda: statsd.named(f"{job}.host_seconds_lost"))
    assert statsd.named(f"{job}.queue_wait") == [f"{job}.queue_wait:12500.000000|ms"]
    assert statsd.named(f"{job}.startup") == [f"{job}.startup:8000.000000|ms"]
    assert statsd.named(f"{job}.restarts.lost_peer") == [f"{job}.restarts.lost_peer:1|c"]
    assert statsd.named(f"{job}.restarts.hang") == [f"{job}.restarts.hang:2|c"]
    assert statsd.named(f"{job}.goodput") == [f"{job}.goodput:0.7|g"]
    assert statsd.named(f"{job}.host_seconds_lost") == [f"{job}.host_seconds_lost:38|c"]


def test_a_triggerers_gauges_follow_what_it_holds(statsd):
    live = send.LiveCount("triggerer.waiting_jobsets")
    live.add(1)
    live.add(1)
    live.add(-1)
    send.count_triggerer("triggerer.watch_relists")
    name = "airflow.ml.jax.triggerer.waiting_jobsets"
    assert statsd.wait_for(lambda: len(statsd.named(name)) == 3)
    assert [line.split(":")[1] for line in statsd.named(name)] == ["1|g", "2|g", "1|g"]
    relists = "airflow.ml.jax.triggerer.watch_relists"
    assert statsd.wait_for(lambda: statsd.named(relists) == [f"{relists}:1|c"])


@pytest.mark.parametrize("value", ["", "jax..x", "jax metrics", ".jax", "jax/x", 7])
def test_a_bad_prefix_is_refused_naming_the_setting(value):
    with pytest.raises(ValueError, match=r"\[jax\] metrics_prefix must be a StatsD name"):
        check_prefix(value)


def test_an_operator_with_a_bad_prefix_setting_fails_at_parse(monkeypatch):
    from airflow_provider_jax.operators import JaxTpuSliceOperator

    monkeypatch.setenv("AIRFLOW__JAX__METRICS_PREFIX", "ml jax")
    with pytest.raises(ValueError, match=r"\[jax\] metrics_prefix: 'ml jax' is not a StatsD name"):
        JaxTpuSliceOperator(task_id="t", accelerator="tpu-v6e-16", image="img", command=["python3"])
