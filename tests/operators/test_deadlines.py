"""Deadlines from the job's own ETA: Airflow's ``DeadlineAlert``s, the task's ``deadline=`` and
the DAG's, held against the live ETA of a real local job through ``airflow dags test``; and
the argument's checks at parse."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest
from airflow.sdk import DeadlineAlert, DeadlineReference, SyncCallback

from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.dag_runs import task_states

BASE = {"task_id": "t", "accelerator": "tpu-v5litepod-4", "backend": "local", "entrypoint": "m:f"}

DAGS = Path(__file__).parent / "dags"


def callback(**kwargs):  # a top-level callable: Airflow imports callbacks by path
    return kwargs


def alert(reference=DeadlineReference.DAGRUN_QUEUED_AT, minutes=10, interval=None, **kwargs):
    return DeadlineAlert(reference=reference,
                         interval=datetime.timedelta(minutes=minutes) if interval is None else interval,
                         callback=SyncCallback(callback, kwargs=kwargs))  # fmt: skip


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (True, r"deadline must be a DeadlineAlert \(airflow.sdk\) or a non-empty list of them"),
        ("2h", r"deadline must be a DeadlineAlert"),
        (3600.0, r"deadline must be a DeadlineAlert"),
        (datetime.timedelta(hours=2), r"deadline must be a DeadlineAlert"),
        ([], r"deadline must be a DeadlineAlert"),
        ((), r"deadline must be a DeadlineAlert"),
        ({"interval": 60}, r"deadline must be a DeadlineAlert"),
        ([alert(), "x"], r"deadline must be a DeadlineAlert"),
        ([alert(), alert()], r"it names one alert twice"),
        (
            alert(DeadlineReference.AVERAGE_RUNTIME()),
            r"AverageRuntimeDeadline is evaluated from "
            r"the metadata database.*Put it on the DAG's deadline=",
        ),
        ("{{ params.deadline }}", r"deadline is not a templated field"),
        # Airflow never serializes a task's deadline=: its own round trip runs at parse.
        (
            alert(DeadlineReference.FIXED_DATETIME("2026-12-01T00:00:00")),
            r"deadline 'tests.operators.test_deadlines.callback': Airflow can't serialize it "
            r"\(AttributeError: 'str' object has no attribute 'timestamp'\)",
        ),
        (alert(DeadlineReference.FIXED_DATETIME(None)), r"Airflow can't serialize it"),
        (alert(interval=datetime.timedelta(days=10**6)), r"longer than 36525 days"),
        (alert(interval="1h"), r"Airflow can't serialize it \(TypeError: Invalid interval"),
        (alert(to={"ops"}), r"its callback's kwargs must be JSON .* set is not JSON"),
    ],
)
def test_a_bad_deadline_is_refused_at_parse_by_name(value, error):
    with pytest.raises((ValueError, TypeError), match=error):
        JaxTpuSliceOperator(**BASE, deadline=value)


def test_a_deadline_needs_the_reports_that_carry_the_eta():
    with pytest.raises(ValueError, match=r"t: deadline= is held against the ETA .* "
                                         r"stream_logs='none' does not read"):  # fmt: skip
        JaxTpuSliceOperator(**BASE, deadline=alert(), stream_logs="none")


def test_a_command_cant_report_the_eta_a_deadline_is_held_against():
    command = {**BASE, "entrypoint": None, "command": ["python3", "train.py"]}
    with pytest.raises(ValueError, match=r"a command= program can't make"):
        JaxTpuSliceOperator(**command, deadline=alert())


@pytest.mark.parametrize(
    "value",
    [
        alert(to=["ops@example.com", "ml@example.com"], extra={"severity": [1, 2]}),  # lists
        alert(interval=3600),  # seconds, as Airflow's own serialization takes them
        alert(DeadlineReference.FIXED_DATETIME(datetime.datetime(2026, 12, 1))),  # naive: UTC
        [alert(to=["a"]), alert(to=["b"])],  # two alerts that differ only by a list
    ],
)
def test_what_airflow_takes_is_taken(value):
    JaxTpuSliceOperator(**BASE, deadline=value)


def test_one_alert_or_several_are_kept_as_a_tuple():
    one, two = alert(), alert(DeadlineReference.DAGRUN_LOGICAL_DATE, 5)
    assert JaxTpuSliceOperator(**BASE, deadline=one).arguments.deadline == (one,)
    assert JaxTpuSliceOperator(**BASE, deadline=[one, two]).arguments.deadline == (one, two)


@pytest.mark.slow
def test_a_job_whose_eta_passes_its_deadlines_says_so_and_their_callbacks_run(
    airflow_home, tmp_path
):
    """A job at 10 steps/s with total_steps=100,000 will finish in about 3 hours: its task's
    deadlines (queued + 10 min, logical date + 20 min, queued + a Variable's 15 min) are told
    and their callbacks run, sync and async, each once, within seconds of the start and long
    before any of the times. The DAG's own deadline a day away is not told; its
    AVERAGE_RUNTIME one is left to Airflow.

    (``airflow dags test`` of Airflow 3.3.2 then fails on the DAG's deadlines as the run ends,
    ``models/dagrun.py`` reading the DAG's alerts as ids: the scheduler's path is not affected,
    and the task's state is what is checked.)"""
    env = {"JAX_TEST_OUT": str(tmp_path), "AIRFLOW_VAR_JAX_DEADLINE_SECONDS": "900"}
    result = airflow_home.airflow("dags", "test", "jax_deadlines", dags_folder=DAGS, env=env)
    log = result.stdout
    assert task_states(airflow_home, "jax_deadlines")["late"] == ("success", 1), log[-6000:]
    told = re.findall(r"At this rate the job finishes at (\S+) \(ETA [^)]+\), \S+ past deadline "
                      r"'([^']+)' at (\S+) \((.+?)\): running its callback", log)  # fmt: skip
    names = ["logical + 20m", "queued + 10m", "queued + a Variable"]
    assert sorted(t[1] for t in told) == names, log[-6000:]
    says = {t[1]: t[3] for t in told}
    assert says["queued + 10m"] == "the DAG run's run_after (DAGRUN_QUEUED_AT) + 0:10:00"
    assert says["logical + 20m"] == "the DAG run's logical date + 0:20:00"
    assert says["queued + a Variable"] == "the DAG run's run_after (DAGRUN_QUEUED_AT) + 0:15:00"
    assert "Deadline average: AverageRuntimeDeadline is evaluated from the metadata database" in log
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert sorted((c["kind"], c["kwargs"]["alert"]) for c in calls) == [
        ("async", "logical + 20m"), ("sync", "queued + 10m"), ("sync", "queued + a Variable")]  # fmt: skip
    for call in calls:
        deadline, run = call["context"]["deadline"], call["context"]["dag_run"]
        assert deadline["predicted"] is True and deadline["total_steps"] == 100_000
        finish = datetime.datetime.fromisoformat(deadline["predicted_finish"])
        due = datetime.datetime.fromisoformat(deadline["deadline_time"])
        assert finish > due > datetime.datetime.now(datetime.UTC)  # told before it passed
        assert run["dag_id"] == "jax_deadlines" and run["run_id"]


def test_an_interval_in_seconds_and_a_naive_time_are_evaluated_as_airflow_takes_them():
    import logging
    from types import SimpleNamespace

    from airflow_provider_jax.operators.deadline_alerts import evaluate

    queued = datetime.datetime(2026, 11, 1, 12, tzinfo=datetime.UTC)
    run = SimpleNamespace(dag_id="d", run_id="r", run_after=queued, logical_date=queued)
    fixed = alert(DeadlineReference.FIXED_DATETIME(datetime.datetime(2026, 12, 1)), minutes=0)
    rows = evaluate([alert(interval=3600), fixed], run, logging.getLogger(__name__))
    assert [row["at"] for row in rows] == [
        (queued + datetime.timedelta(seconds=3600)).timestamp(),
        datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC).timestamp(),
    ]
