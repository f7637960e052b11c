"""Nothing is left running when a try fails between creating its JobSet and waiting on it:
a failure injected at each step (``dags/injected_failures.py``) fails the task with the
injected error, the task log says the JobSet was deleted, and the real API server holds no
JobSet, Job or pod of it afterwards."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import dags_test

DAGS = Path(__file__).parent / "dags"
STEPS = ("backend_started", "announce", "defer")
KINDS = (
    "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets",
    "/apis/batch/v1/namespaces/default/jobs",
    "/api/v1/namespaces/default/pods",
)


@pytest.fixture(scope="module")
def run(real_cluster: ControlPlane, airflow_home: AirflowHome, tmp_path_factory):
    out = tmp_path_factory.mktemp("injected")
    ran = dags_test(
        airflow_home,
        DAGS,
        "jax_injected_failures",
        out,
        300,
        AIRFLOW_CONN_KUBERNETES_DEFAULT=connection(real_cluster.kubeconfig()),
    )
    # What the product left, read before any test's clean-up runs: a JobSet whose deletion it
    # asked for stays, marked, until the garbage collector has taken its Jobs and pods
    # (Foreground), and a real kubelet takes seconds to end a running pod.
    ran["jobsets_left"] = [
        j["metadata"]["name"]
        for j in real_cluster.api().get(KINDS[0])["items"]
        if not j["metadata"].get("deletionTimestamp")
    ]
    return ran


@pytest.mark.parametrize("step", STEPS)
def test_the_task_fails_with_the_injected_error_and_says_it_deleted_its_jobset(run, step):
    log = run["proc"].stdout
    assert run["states"][f"fail_at_{step}"][0] == "failed", log[-6000:]
    assert f"injected at {step}" in log, log[-6000:]
    said = (
        "was created, but starting to wait on it failed"
        if step == "backend_started"
        else ("was started, but this try failed before waiting on it")
    )
    assert said in log and "deleting it" in log, log[-6000:]


def test_no_jobset_is_left_when_the_tasks_end(run):
    """The product's part: every JobSet it created is deleted before its task fails (its
    Jobs and pods then go with Kubernetes' garbage collector, Foreground: the next test)."""
    assert run["jobsets_left"] == []


def test_nothing_is_left_on_the_cluster(run, real_cluster: ControlPlane):
    api = real_cluster.api()
    deadline = time.monotonic() + 120
    left = ["?"]
    while left and time.monotonic() < deadline:  # the garbage collector takes Jobs and pods
        left = [
            item["metadata"]["name"]
            for kind in KINDS
            for item in api.get(kind)["items"]
            if item["metadata"]["name"].startswith("fail-at-")
        ]
        if left:
            time.sleep(0.5)
    assert left == [], left
