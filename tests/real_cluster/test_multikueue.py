"""MultiKueue over three real clusters (``harness/real_cluster/multikueue.py``): this
session's cluster is the manager, two more are its workers, each with JobSet and Kueue and the
real nodes of the pool its quota is for (two TPU hosts, two H100 hosts).
The product, pointed at the manager through ``airflow dags test``, submits to the MultiKueue
queue, waits on the manager's mirrored status, names the worker, streams the leader's log and
reads its result through the worker's connection (or ``output_dir`` where none reaches it),
refuses a job with neither before submission, and a timeout leaves nothing on any cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.k8s_emulator.rbac import docs_role_manifest
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import grant
from harness.real_cluster.multikueue import connect, start_workers, worker_names
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import dags_test

DAGS = Path(__file__).parent / "dags"
# The first test's setup starts two more clusters with their nodes, then the whole DAG run.
pytestmark = pytest.mark.timeout(900)
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


@pytest.fixture(scope="module")
def workers(real_cluster: ControlPlane, tmp_path_factory) -> Iterator[dict[str, ControlPlane]]:
    planes = start_workers(tmp_path_factory.mktemp("workers"), worker_names(2))
    try:
        connect(real_cluster, planes)
        # On worker-1, whose pods the product reads, its identity has the docs' Role only.
        grant(planes["worker-1"].api(), docs_role_manifest(name="jax-multikueue-worker-reader"))
        yield planes
    finally:
        for plane in planes.values():
            plane.down()


def _connection(kubeconfig: Path, **extra: object) -> str:
    return json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig), **extra}}
    )


@pytest.fixture(scope="module")
def run(real_cluster, workers, airflow_home: AirflowHome, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("multikueue")
    manager = real_cluster.kubeconfig()
    return dags_test(
        airflow_home,
        DAGS,
        "jax_multikueue",
        out,
        400,
        AIRFLOW_CONN_MANAGER=_connection(
            manager, multikueue_workers={"worker-1": "worker_1", "worker-2": "worker_2"}
        ),
        AIRFLOW_CONN_MANAGER_PARTIAL=_connection(
            manager, multikueue_workers={"worker-1": "worker_1", "worker-2": None}
        ),
        AIRFLOW_CONN_MANAGER_UNLISTED=_connection(
            manager, multikueue_workers={"worker-1": "worker_1"}
        ),
        AIRFLOW_CONN_WORKER_1=_connection(workers["worker-1"].kubeconfig("airflow")),
        AIRFLOW_CONN_WORKER_2=_connection(workers["worker-2"].kubeconfig()),
    )


def recorded(run: dict, name: str) -> dict:
    return json.loads((run["out"] / f"{name}.json").read_text())


def test_a_job_runs_on_the_worker_that_has_its_quota_and_its_result_comes_back(run):
    log = run["proc"].stdout
    assert run["states"]["tpu"][0] == "success", log[-6000:]
    assert recorded(run, "tpu")["result"]["step"] == 3  # the leader's termination message
    assert recorded(run, "tpu")["admission"]["worker"] == "worker-1"
    assert "admitted by Kueue (ClusterQueue multikueue)" in log
    assert "on worker cluster worker-1" in log
    assert "[0/0]" in log  # the leader's own lines, streamed from worker-1's pod


def test_a_job_that_does_not_fit_worker_1_runs_on_worker_2(run):
    log = run["proc"].stdout
    assert run["states"]["gpu"][0] == "success", log[-6000:]
    assert recorded(run, "gpu")["admission"]["worker"] == "worker-2"
    assert recorded(run, "gpu")["result"]["step"] == 3  # through output_dir/result.json
    assert "runs on MultiKueue worker cluster worker-2, which no Airflow connection reaches" in log


def test_a_job_whose_result_could_not_come_back_is_refused_before_submission(run):
    log = run["proc"].stdout
    assert run["states"]["refused"][0] == "failed"
    assert (
        "Nothing was submitted: MultiKueue may run this job on worker cluster(s) ['worker-2']"
        in log
    )


def test_a_result_that_cannot_come_back_fails_the_task_instead_of_an_empty_xcom(run):
    """A worker the connection's map leaves out, and no output_dir: the job ends on worker-2,
    and the task fails saying where the result was expected; its XCom is not None."""
    log = run["proc"].stdout
    assert run["states"]["lost"][0] == "failed", log[-6000:]
    assert "the leader's result could not be read" in log, log[-6000:]


def test_a_timeout_deletes_the_manager_copy_and_multikueue_the_workers(
    run, real_cluster: ControlPlane, workers: dict[str, ControlPlane]
):
    assert run["states"]["timed_out"][0] == "failed"
    for plane in [real_cluster, *workers.values()]:
        api = plane.api()
        api.wait_for(
            f"nothing left on {plane.directory.name}",
            lambda api=api: (
                not api.get(JOBSETS)["items"]
                and not api.get("/api/v1/namespaces/default/pods")["items"]
            ),
            timeout=90,
        )
