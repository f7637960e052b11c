"""The sweep that deletes a running JobSet whose deferred task finished (marked failed or
success) before any triggerer ran its trigger, and never one a task still waits on."""

from __future__ import annotations

import asyncio
import copy
import math
from typing import Any

import pytest

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.manifest.provider_keys import (
    DEFERRED_BY_TRY_ANNOTATION,
    TASK_INSTANCE_ANNOTATION,
    task_instance,
    task_instance_annotation,
)
from airflow_provider_jax.triggers.watch import informer as informers
from airflow_provider_jax.triggers.watch import orphans
from harness.jobsets import manifest
from harness.k8s_emulator import PodScript

DAG = "train_dag"


def jobset(
    name: str,
    task_id: str,
    *,
    map_index: int = -1,
    deferred: bool = True,
    identity: bool = True,
    finished: bool = False,
) -> dict[str, Any]:
    body = copy.deepcopy(manifest(name, task_id=task_id))
    notes = body["metadata"].setdefault("annotations", {})
    if deferred:
        notes[DEFERRED_BY_TRY_ANNOTATION] = "1"
    if identity:
        notes[TASK_INSTANCE_ANNOTATION] = task_instance_annotation(
            DAG, task_id, "manual__1", map_index
        )
    if finished:
        body["status"] = {"terminalState": "Completed"}
    return body


def states(**by_key: str) -> dict[str, Any]:
    return {DAG: {"manual__1": by_key}}


def test_the_identity_round_trips_and_a_bad_one_is_none():
    body = jobset("a-0123456789", "a", map_index=3)
    assert task_instance(body) == {
        "dag_id": DAG,
        "task_id": "a",
        "run_id": "manual__1",
        "map_index": 3,
    }
    for bad in ("", "{", '{"dag_id": 1}', '{"dag_id":"d","task_id":"t","run_id":"r"}'):
        body["metadata"]["annotations"][TASK_INSTANCE_ANNOTATION] = bad
        assert task_instance(body) is None


def test_only_running_deferred_on_unwatched_jobsets_of_a_known_task_are_asked_about():
    cache = {
        b["metadata"]["name"]: b
        for b in (
            jobset("asked-0123456789", "asked"),
            jobset("blocking-0123456789", "blocking", deferred=False),
            jobset("older-0123456789", "older", identity=False),
            jobset("done-0123456789", "done", finished=True),
            jobset("watched-0123456789", "watched"),
        )
    }
    found = orphans.candidates(cache, watched={"watched-0123456789"})
    assert [b["metadata"]["name"] for b in found] == ["asked-0123456789"]
    assert orphans.questions(found) == {DAG: (["asked"], ["manual__1"])}


@pytest.mark.parametrize(
    ("state", "deleted"),
    [
        ("failed", True),
        ("success", True),
        ("skipped", True),
        ("upstream_failed", True),
        ("removed", True),
        ("deferred", False),  # its trigger waits, here or in another triggerer
        ("scheduled", False),  # a trigger fired: the try resumes and reads the JobSet
        ("queued", False),
        ("running", False),
        ("up_for_retry", False),
        (None, False),  # cleared: the new try deletes it itself, by uid
    ],
)
def test_only_a_finished_task_instance_gives_its_jobset_up(state, deleted):
    plain, mapped = jobset("a-0123456789", "a"), jobset("m-0123456789", "m", map_index=2)
    answers = states(a=state, m_2=state, m_1="failed")
    gone = orphans.abandoned([plain, mapped], answers)
    assert gone == ([plain, mapped] if deleted else [])
    assert orphans.abandoned([plain], {}) == []  # no answer: kept


def test_a_triggerers_watch_deletes_the_abandoned_jobset_and_keeps_the_rest(k8s, monkeypatch):
    """Through the shared watch on the emulator: the sweep runs at its first list."""
    k8s.script(lambda pod: PodScript(logs=["training"], duration=math.inf))  # all still run
    hook = KubernetesCluster().hook()
    for body in (
        jobset("marked-failed-0123456789", "marked_failed"),
        jobset("still-deferred-0123456789", "still_deferred"),
        jobset("resuming-0123456789", "resuming"),
    ):
        hook.create_jobset(body)
    asked: list[tuple[str, list[str], list[str]]] = []

    def airflow_says(dag_id: str, task_ids: list[str], run_ids: list[str]) -> dict[str, Any]:
        asked.append((dag_id, task_ids, run_ids))
        return {"manual__1": {"marked_failed": "failed", "resuming": "queued"}}

    monkeypatch.setattr(orphans, "task_states", airflow_says)
    monkeypatch.setattr(orphans, "enabled", True)

    async def watch_one() -> None:
        cluster = KubernetesCluster()
        async with informers.subscribe(cluster, "default", "still-deferred-0123456789"):
            for _ in range(200):
                if len(k8s.jobsets()) == 2:
                    return
                await asyncio.sleep(0.05)

    asyncio.run(watch_one())
    names = sorted(j["metadata"]["name"] for j in k8s.jobsets())
    assert names == ["resuming-0123456789", "still-deferred-0123456789"]
    # One question for the DAG; the watched JobSet's task was not even asked about.
    assert asked == [(DAG, ["marked_failed", "resuming"], ["manual__1"])]
