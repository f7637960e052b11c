"""The life of a job through the Kubernetes backend, on the real control plane: real Airflow
(``airflow dags test``, triggers inline), real JAX in every pod, the real JobSet and Job
controllers and garbage collector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import dags_test

DAGS = Path(__file__).parent / "dags"


@pytest.fixture(scope="module")
def run(real_cluster: ControlPlane, airflow_home: AirflowHome, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("real-e2e")
    return dags_test(
        airflow_home,
        DAGS,
        "jax_real_cluster",
        out,
        280,
        AIRFLOW_CONN_KUBERNETES_DEFAULT=connection(real_cluster.kubeconfig()),
    )


def received(run: dict, name: str) -> object:
    return json.loads((run["out"] / f"{name}.json").read_text())


def test_a_two_host_tpu_slice_returns_the_leaders_value(run):
    assert run["states"]["tpu"][0] == "success", run["proc"].stdout[-4000:]
    result = received(run, "tpu")
    assert (result["processes"], result["devices"], result["step"]) == (2, 8, 10)


def test_a_two_node_gpu_job_returns_the_leaders_value(run):
    assert run["states"]["gpu"][0] == "success", run["proc"].stdout[-4000:]
    result = received(run, "gpu")
    assert (result["processes"], result["devices"]) == (2, 16)


def test_the_failing_hosts_traceback_is_the_tasks_error(run):
    assert run["states"]["fails"][0] == "failed"
    log = run["proc"].stdout
    assert "[0/1] ValueError: host 1 found a NaN in its shard" in log
    assert 'failing_train.py", line' in log  # its traceback, from its own pod


def test_a_result_json_cannot_carry_fails_once_without_a_retry_and_is_kept(run):
    """The leader returned ``{"loss": nan}``: the task fails on its first try (its retries
    would train again for the same result), says how to return it, and the value is kept."""
    log = run["proc"].stdout
    assert run["states"]["nan_result"] == ("failed", 1), log[-4000:]
    assert "return None in its place" in log
    kept = run["out"] / "nan-result" / "result.unreturnable.json"
    assert json.loads(kept.read_text().replace("NaN", "null")) == {"loss": None, "step": 10}
    assert not (run["out"] / "nan-result" / "result.json").exists()


def test_a_program_with_a_bare_initialize_runs_unchanged_in_command_mode(run):
    """JAX's own example calls ``jax.distributed.initialize()`` with no arguments: through the
    real JobSet and Job controllers and the kubelet's prelude, every pod joins one job."""
    assert run["states"]["bare_initialize"][0] == "success", run["proc"].stdout[-4000:]
    seen = [json.loads((run["out"] / f"process-{i}.json").read_text()) for i in range(2)]
    assert [(s["process_index"], s["process_count"], s["device_count"]) for s in seen] == [
        (0, 2, 8),
        (1, 2, 8),
    ]


def test_the_leaders_log_reached_the_task_log_through_pods_log(run):
    assert "[0/0] step 10: loss=" in run["proc"].stdout


def test_nothing_is_left_on_the_cluster(run, real_cluster: ControlPlane):
    api = real_cluster.api()
    jobsets = api.get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets")["items"]
    pods = api.get("/api/v1/namespaces/default/pods")["items"]
    assert [j["metadata"]["name"] for j in jobsets] == []
    assert [p["metadata"]["name"] for p in pods] == []
