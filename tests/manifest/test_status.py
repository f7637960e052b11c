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
