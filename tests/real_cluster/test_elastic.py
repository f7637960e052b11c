"""Elastic slices on real nodes, through ``airflow dags test``: a 2-slice job with
``min_slices=1`` loses its second node pool midway (its machines stop at once, kubelets,
containers and all, and their Nodes are deleted, as GKE deletes a preempted Spot VM's; PodGC
then fails and deletes their pods), goes on with one slice from its checkpoint, and grows back
to two when the machines boot again and their kubelets register, with exactly one JobSet at
any time."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection
from harness.real_cluster.nodes import NODES, pools
from tests.support.airflow_home import AIRFLOW, AirflowHome
from tests.support.elastic_reference import reference_w
from tests.support.jobset_schema import REPO
from tests.support.real_cluster_fixtures import MACHINE_HOSTNAME
from tests.support.waiting import eventually

DAGS = Path(__file__).parent / "dags"
POOL_B = [n.name for n in pools(NODES)["tpu-v5e-b"]]
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


class Drill:
    """``airflow dags test`` of one task of ``dags/elastic_dags.py`` on the real control
    plane, counting the task's JobSets all along."""

    def __init__(self, plane: ControlPlane, home: AirflowHome, out: Path, task_id: str) -> None:
        self.plane = plane
        self.api, self.out = plane.api(), out / task_id
        env = home.env(DAGS, JAX_TEST_OUT=str(out),
                       AIRFLOW_CONN_KUBERNETES_DEFAULT=connection(plane.kubeconfig()))  # fmt: skip
        env["PYTHONPATH"] = f"{REPO}:{DAGS}"
        self.lines: list[str] = []
        self.most_jobsets = 0
        self.proc = subprocess.Popen(
            [*AIRFLOW, "dags", "test", f"jax_elastic_real_{task_id}", "2024-01-01"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.done = threading.Event()
        self.threads = [
            threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True),
            threading.Thread(target=self._count_jobsets, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def _count_jobsets(self) -> None:  # the most JobSets there were at once, while it runs
        while not self.done.wait(0.2):
            self.most_jobsets = max(self.most_jobsets, len(self.api.get(JOBSETS)["items"]))

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def reached(self, what: str, check: Any) -> None:
        def holds() -> bool:
            assert self.proc.poll() is None, f"ended before {what}:\n{self.log[-8000:]}"
            return bool(check())

        eventually(what, holds, 240)

    def pool_b(self, present: bool) -> None:
        """The Spot pool's VMs preempted (their machines stop at once, and their Nodes are
        deleted), or back (the machines boot again, and each kubelet registers its Node)."""
        if present:
            self.plane.cluster.start(POOL_B, self.api)
            return
        for name in POOL_B:
            self.plane.cluster.stop(name, kill=True)
        for name in POOL_B:
            self.api.delete(f"/api/v1/nodes/{name}")

    def finish(self) -> str:
        try:
            self.proc.wait(timeout=300)
        finally:
            self.pool_b(present=True)
            if self.proc.poll() is None:
                self.proc.terminate()
                self.proc.wait(timeout=60)
            self.done.set()
            for thread in self.threads:
                thread.join()
        (self.out.parent / "dags-test.log").write_text(self.log)
        assert self.proc.returncode == 0, self.log[-8000:]
        return self.log


@pytest.mark.timeout(600)
@pytest.mark.parametrize("task_id", ["deferred", "in_worker"])
def test_a_job_with_min_slices_shrinks_when_a_pool_goes_and_grows_back(
    real_cluster: ControlPlane, airflow_home: AirflowHome, tmp_path, task_id
):
    drill = Drill(real_cluster, airflow_home, tmp_path, task_id)
    try:
        drill.reached("the step 10 checkpoint, then step 13", (drill.out / "drill-lose").exists)
        drill.pool_b(present=False)
        drill.reached("1 slice training at step 23", (drill.out / "drill-return").exists)
        drill.pool_b(present=True)
        (drill.out / "drill-returned").touch()
    finally:
        log = drill.finish()
    assert "shrinking from 2 to 1 of 2 slices (min_slices=1), from checkpoint step" in log, log[
        -8000:
    ]
    assert "growing from 1 to 2 slices" in log, log[-8000:]
    assert socket.gethostname() == MACHINE_HOSTNAME  # nodes booted again named only themselves
    recorded = json.loads((tmp_path / f"{task_id}.json").read_text())
    result, goodput = recorded["result"], recorded["goodput"]
    assert (result["slices"], result["start_reason"], result["devices"]) == (2, "grew", 16)
    np.testing.assert_allclose(result["w_sum"], reference_w(60).sum(), atol=1e-3)
    assert drill.most_jobsets == 1  # never two JobSets of the task at once
    assert set(goodput["by_slices"]) == {"1", "2"}, goodput
    assert goodput["restarts"].get("resize") == 2, goodput
    assert not drill.api.get(JOBSETS)["items"]


@pytest.mark.timeout(600)
def test_without_min_slices_the_job_waits_for_the_pool(
    real_cluster: ControlPlane, airflow_home: AirflowHome, tmp_path
):
    """The same loss without min_slices: one slice's pods wait unschedulable and the other
    waits for them, as a multislice job does today; when the nodes return, they bind and the
    job goes on at its size from its checkpoint."""
    drill = Drill(real_cluster, airflow_home, tmp_path, "fixed_size")
    try:
        drill.reached("the step 10 checkpoint, then step 13", (drill.out / "drill-lose").exists)
        drill.pool_b(present=False)
        # Either slice may be the one left without a pool: kube-scheduler gives the pool that
        # is left to whichever slice's leader it schedules first after the restart.
        drill.reached(
            "a slice's pods unschedulable", lambda: re.search(r"\[\d/0\] unschedulable", drill.log)
        )
        drill.pool_b(present=True)
    finally:
        log = drill.finish()
    assert "shrinking" not in log and "growing" not in log
    result = json.loads((tmp_path / "fixed_size.json").read_text())["result"]
    assert (result["slices"], result["start_reason"]) == (2, "restart")
    assert result["resumed_from"] >= 10
    np.testing.assert_allclose(result["w_sum"], reference_w(60).sum(), atol=1e-3)
    assert drill.most_jobsets == 1
