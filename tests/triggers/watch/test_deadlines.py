"""Deadlines held against the leader's ETA in the trigger (``reporting/deadlines.py``), against
the Kubernetes emulator: the task log says so, the callback runs in a thread of the triggerer,
once, and the deadlines ride in the trigger's row."""

from __future__ import annotations

import json
import time
from pathlib import Path

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.reporting.deadlines import Deadline
from airflow_provider_jax.runtime.messages import report_line
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import manifest, succeed, trigger_for
from harness.k8s_emulator import PodRun, PodScript
from tests.support.trigger_runs import events
from tests.support.waiting import eventually

CALLBACK = "tests.support.deadline_callbacks.record"


def steady(pod: PodRun) -> PodScript:
    """Steps 1..8 of 100,000 over about 1.6 s: an ETA of hours."""
    done = succeed(steps=0)(pod)
    reports = [report_line({"step": s, "total_steps": 100_000}) for s in range(1, 9)]
    return PodScript(logs=reports, message=done.message, duration=1.8)


def deadline(calls: Path, in_s: float, name: str) -> dict:
    return Deadline(at=time.time() + in_s, says="a test's", callback=CALLBACK,
                    kwargs={"path": str(calls), "alert": name}, name=name,
                    dag_run={"dag_id": "d", "run_id": "r"}).as_row()  # fmt: skip


async def test_an_eta_past_a_deadline_is_told_and_its_callback_runs_once(k8s, capsys, tmp_path):
    calls = tmp_path / "calls.jsonl"
    k8s.script(steady)
    created = KubernetesCluster().hook().create_jobset(manifest(hosts=2))
    rows = [deadline(calls, 600, "soon"), deadline(calls, 10**7, "months away")]
    (event,) = await events(trigger_for(created, deadlines=rows))
    assert event["status"] == "success", event
    log = capsys.readouterr().out
    assert log.count("past deadline 'soon'") == 1, log
    assert "'months away'" not in log
    eventually("the callback ran", calls.exists, timeout=30)
    (call,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert call["kwargs"] == {"alert": "soon"} and call["context"]["dag_run"]["run_id"] == "r"
    assert call["context"]["deadline"]["predicted"] is True


def test_deadlines_ride_in_the_row_only_when_there_are_some(k8s, tmp_path):
    created = KubernetesCluster().hook().create_jobset(manifest(hosts=2))
    _, plain = trigger_for(created).serialize()
    assert "deadlines" not in plain  # a row the previous release can load
    row = deadline(tmp_path / "calls.jsonl", 60, "soon")
    _, kwargs = trigger_for(created, deadlines=[row]).serialize()
    again = JobSetTrigger(**json.loads(json.dumps(kwargs)))
    assert [Deadline.of_row(d) for d in again.watch.deadlines] == [Deadline.of_row(row)]
