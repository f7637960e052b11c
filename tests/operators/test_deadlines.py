"""Deadlines from the job's own ETA: Airflow's ``DeadlineAlert``s, the task's ``deadline=`` and
the DAG's, held against the live ETA of a real local job through ``airflow dags test``; and
the argument's checks at parse."""

from __future__ import annotations

import datetime
import json
import re

import pytest
from airflow.sdk import DeadlineAlert, DeadlineReference, SyncCallback

from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.operators.test_elastic import DAGS
from tests.support.dag_runs import task_states

BASE = {"task_id": "t", "accelerator": "tpu-v5litepod-4", "backend": "local", "entrypoint": "m:f"}


def callback(**kwargs):  # a top-level callable: Airflow imports callbacks by path
    return kwargs


def alert(reference=DeadlineReference.DAGRUN_QUEUED_AT, minutes=10) -> DeadlineAlert:
    return DeadlineAlert(reference=reference, interval=datetime.timedelta(minutes=minutes),
                         callback=SyncCallback(callback))  # fmt: skip


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
    ],
)
def test_a_bad_deadline_is_refused_at_parse_by_name(value, error):
    with pytest.raises((ValueError, TypeError), match=error):
        JaxTpuSliceOperator(**BASE, deadline=value)


def test_a_deadline_needs_the_reports_that_carry_the_eta():
    with pytest.raises(ValueError, match=r"t: deadline= is held against the ETA .* "
                                         r"stream_logs='none' does not read"):  # fmt: skip
        JaxTpuSliceOperator(**BASE, deadline=alert(), stream_logs="none")


def test_one_alert_or_several_are_kept_as_a_tuple():
    one, two = alert(), alert(DeadlineReference.DAGRUN_LOGICAL_DATE, 5)
    assert JaxTpuSliceOperator(**BASE, deadline=one).deadline == (one,)
    assert JaxTpuSliceOperator(**BASE, deadline=[one, two]).deadline == (one, two)


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
