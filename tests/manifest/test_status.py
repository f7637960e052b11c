"""``jobset_status.as_read``: the JobSet a triggerer caches gives every reader the answers the
whole object gives, at a fraction of its size."""

from __future__ import annotations

import json

import pytest

from airflow_provider_jax.hooks.resources import JOBSETS
from airflow_provider_jax.manifest import status
from airflow_provider_jax.reporting.goodput import chips
from harness.jobsets import manifest

LABELS = {"dag_id": "dag", "task_id": "train", "run_id": "manual__1", "map_index": "-1"}


def served(jobset: dict, **status_fields) -> dict:
    """``jobset`` as an API server returns it: server-set metadata, managed fields, status."""
    meta = jobset["metadata"]
    return {
        **jobset,
        "metadata": {
            **meta,
            "uid": "u-1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-25T00:00:00Z",
            "managedFields": [
                {"manager": m, "operation": "Update", "fieldsV1": {"f:spec": {"f:x": {}}}}
                for m in ("airflow", "jobset-controller")
            ],
        },
        "status": status_fields,
    }


STATES = {
    "running": {
        "restarts": 1,
        "replicatedJobsStatus": [{"name": "slice", "ready": 1, "active": 1, "succeeded": 0}],
    },
    "failed": {
        "terminalState": "Failed",
        "conditions": [
            {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "host 1"}
        ],
    },
    "completed": {"conditions": [{"type": "Completed", "status": "True"}]},
    "new": {},
}


@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("hosts", [1, 8])
def test_every_reader_answers_the_same_from_what_is_cached(state, hosts):
    whole = served(manifest(hosts=hosts, max_restarts=3, queue_name="q"), **STATES[state])
    whole["spec"]["suspend"] = state == "new"
    if state == "failed":
        whole["metadata"]["deletionTimestamp"] = "2026-11-25T00:01:00Z"
    cached = JOBSETS.trim(json.loads(json.dumps(whole)))
    readers = [
        status.terminal_state,
        status.is_deleting,
        status.is_suspended,
        status.uid,
        status.restarts,
        status.summary,
        status.has_started,
        status.has_run,
        status.all_ready,
        chips,
        lambda js: status.owned_by(js, LABELS),
        lambda js: status.same_try(js, {"try_number": "1"}),
        lambda js: js["metadata"]["labels"],  # Kueue's queue label (queue_wait)
        lambda js: js["metadata"]["creationTimestamp"],  # the goodput clock's start
        lambda js: js["metadata"]["resourceVersion"],  # the informer's "changed?"
        lambda js: js["metadata"].get("annotations"),  # who deferred on it (the backend)
    ]
    for read in readers:
        assert read(cached) == read(whole), read
    assert chips(cached) == {1: 8, 8: 32}[hosts]  # v5e: 8 chips on one host, 4 on each of 8
    # The pod template, podFailurePolicy's exit codes and managed fields stay out.
    assert len(json.dumps(cached)) < len(json.dumps(whole)) / 3
    assert "managedFields" not in cached["metadata"]


def test_a_jobset_missing_optional_parts_is_kept_as_it_is():
    bare = {"metadata": {"name": "x"}, "spec": {"replicatedJobs": [{"name": "a"}]}}
    assert status.as_read(bare) == {
        "metadata": {"name": "x"},
        "spec": {
            "replicatedJobs": [
                {"name": "a", "template": {"spec": {"template": {"spec": {"containers": []}}}}}
            ]
        },
    }
    assert status.all_ready(status.as_read(bare)) == status.all_ready(bare)
    assert chips(status.as_read(bare)) == chips(bare) == 0


def test_in_place_restarts_count_as_restarts_from_when_one_begins():
    """JobSet counts recreations in ``status.restarts`` and in-place restarts apart: the
    attempt every pod's agent reached (current) and, once one begins, the one before it."""
    from airflow_provider_jax.manifest.status import restarts

    def jobset(**state):
        return {"status": state}

    assert restarts(jobset()) == 0
    assert restarts(jobset(currentInPlaceRestartAttempt=0)) == 0  # the first start
    assert restarts(jobset(currentInPlaceRestartAttempt=0, previousInPlaceRestartAttempt=0)) == 1
    assert restarts(jobset(currentInPlaceRestartAttempt=1, previousInPlaceRestartAttempt=0)) == 1
    assert restarts(jobset(restarts=2, currentInPlaceRestartAttempt=1)) == 3


def test_the_culprit_of_an_in_place_restart_is_the_pod_that_failed_first_not_a_lost_peer():
    from airflow_provider_jax.manifest.status import restart_attempt, restarted_in_place
    from airflow_provider_jax.runtime.exits import LOST_PEER
    from airflow_provider_jax.runtime.messages import failure_message

    def pod(host, code, reason, finished, attempt="1", message=""):
        return {
            "metadata": {
                "labels": {"jobset.sigs.k8s.io/job-index": "0",
                           "jobset.sigs.k8s.io/restart-attempt": "0"},
                "annotations": {"batch.kubernetes.io/job-completion-index": str(host),
                                "jobset.sigs.k8s.io/in-place-restart-attempt": attempt},
            },
            "status": {"containerStatuses": [{"name": "jax", "restartCount": 1,
                "state": {"running": {}}, "lastState": {"terminated": {
                    "exitCode": code, "reason": reason, "finishedAt": finished,
                    "message": message}}}]},
        }  # fmt: skip

    pods = [
        pod(0, 137, "RestartingAllContainers", "2026-01-01T00:00:03Z"),
        pod(1, 137, "Error", "2026-01-01T00:00:02Z"),  # killed: the cause
        # It lost its peer (its runtime says so), even if it ended first.
        pod(2, 42, "Error", "2026-01-01T00:00:01Z", message=failure_message("lost", "", LOST_PEER)),
    ]
    assert [p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            for p in restarted_in_place(pods)] == ["1", "2"]  # fmt: skip
    assert restart_attempt(pods[0]) == 1  # recreations (label) plus in-place restarts
