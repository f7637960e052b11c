"""Elastic slices on the real control plane, through ``airflow dags test``: a 2-slice job with
``min_slices=1`` loses its second node pool's nodes midway (the fake kubelet fails their pods
as PodGC does, and binds nothing there), goes on with one slice from its checkpoint, and grows
back to two when the nodes return, with exactly one JobSet at any time."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from kubernetes import client, config

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection
from harness.real_cluster.nodes import NODES
from tests.support.airflow_home import AIRFLOW, AirflowHome
from tests.support.elastic_reference import reference_w
from tests.support.jobset_schema import REPO
from tests.support.waiting import eventually

DAGS = Path(__file__).parent / "dags"
POOL_B = [n for n in NODES if n.labels.get("cloud.google.com/gke-nodepool") == "tpu-v5e-b"]
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


@pytest.mark.timeout(600)
def test_a_job_with_min_slices_shrinks_when_a_pool_goes_and_grows_back(
    real_cluster: ControlPlane, airflow_home: AirflowHome, tmp_path
):
    core = client.CoreV1Api(config.new_client_from_config(str(real_cluster.kubeconfig())))
    api = real_cluster.api()
    env = airflow_home.env(
        DAGS,
        JAX_TEST_OUT=str(tmp_path),
        AIRFLOW_CONN_KUBERNETES_DEFAULT=connection(real_cluster.kubeconfig()),
    )
    env["PYTHONPATH"] = f"{REPO}:{DAGS}"
    lines: list[str] = []
    most_jobsets = [0]
    proc = subprocess.Popen(
        [*AIRFLOW, "dags", "test", "jax_elastic_real", "2024-01-01"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    done = threading.Event()

    def count_jobsets() -> None:  # the most JobSets there were at once, while it runs
        while not done.wait(0.2):
            most_jobsets[0] = max(most_jobsets[0], len(api.get(JOBSETS)["items"]))

    counter = threading.Thread(target=count_jobsets, daemon=True)
    counter.start()
    out = tmp_path / "deferred"

    def reached(name: str) -> bool:
        assert proc.poll() is None, "".join(lines)[-8000:]
        return (out / name).exists()

    try:
        eventually("the step 10 checkpoint, then step 13", lambda: reached("drill-lose"), 240)
        for node in POOL_B:  # the Spot pool's VMs are preempted: its Nodes go
            core.delete_node(node.name)
        eventually("1 slice training at step 23", lambda: reached("drill-return"), 240)
        for node in POOL_B:  # ... and come back
            core.create_node({"metadata": {"name": node.name, "labels": dict(node.labels)}})
        (out / "drill-returned").touch()
        proc.wait(timeout=300)
    finally:
        for node in POOL_B:
            try:
                core.create_node({"metadata": {"name": node.name, "labels": dict(node.labels)}})
            except client.ApiException as err:
                if err.status != 409:
                    raise
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)
        done.set()
        counter.join()
        reader.join()
    log = "".join(lines)
    (tmp_path / "dags-test.log").write_text(log)
    assert proc.returncode == 0, log[-8000:]
    assert "shrinking from 2 to 1 of 2 slices (min_slices=1), from checkpoint step" in log, log[
        -8000:
    ]
    assert "growing from 1 to 2 slices" in log, log[-8000:]
    recorded = json.loads((tmp_path / "deferred.json").read_text())
    result, goodput = recorded["result"], recorded["goodput"]
    assert (result["slices"], result["start_reason"], result["devices"]) == (2, "grew", 16)
    np.testing.assert_allclose(result["w_sum"], reference_w(60).sum(), atol=1e-3)
    assert most_jobsets[0] == 1  # never two JobSets of the task at once
    assert set(goodput["by_slices"]) == {"1", "2"}, (goodput, log[-8000:])
    assert goodput["restarts"].get("resize") == 2, goodput
    assert not api.get(JOBSETS)["items"]
