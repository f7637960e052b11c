"""Where kube-scheduler puts a job's pods on the real nodes, and what the task log says while it
cannot: node selectors, JobSet's exclusive placement of each slice in one node pool, GKE's
accelerator taints met by the tolerations the API server adds (``ExtendedResourceToleration``),
a user's ``tolerations=`` and ``pod_template_override`` meeting a node's own taint; and a pod no
node can take, waiting with the scheduler's reason in the task log and failing at
``queue_timeout`` naming it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.nodes import NODES, pools
from tests.support.real_cluster_jobs import logger, run

POOL = "cloud.google.com/gke-nodepool"
MAINTENANCE = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}
TOLERATE_MAINTENANCE = {"key": MAINTENANCE["key"], "operator": "Exists", "effect": "NoSchedule"}
HELLO = {"entrypoint": "tests.support.programs:hello", "initialize_distributed": False}


def _pods(plane: ControlPlane, jobset_prefix: str) -> list[dict[str, Any]]:
    items = plane.api().get("/api/v1/namespaces/default/pods")["items"]
    return [
        p
        for p in items
        if p["metadata"]["labels"]
        .get("jobset.sigs.k8s.io/jobset-name", "")
        .startswith(jobset_prefix)
    ]


def _node_pool(plane: ControlPlane, node: str) -> str:
    return plane.api().get(f"/api/v1/nodes/{node}")["metadata"]["labels"][POOL]


def test_two_slices_land_in_one_pool_each(real_k8s: ControlPlane):
    """JobSet's exclusive placement (``alpha.jobset.sigs.k8s.io/exclusive-topology`` on the node
    pool): kube-scheduler puts each slice's two hosts in one pool, the two slices in two."""
    log, _ = logger("placed")
    thread, out = run(
        "placed", log, num_slices=2, entrypoint="tests.support.programs:collective",
        on_finish_action="keep_jobset",
    )  # fmt: skip
    thread.join(240)
    outcome = out["value"]
    assert not isinstance(outcome, BaseException), outcome
    assert outcome.result["process_count"] == 4
    slices: dict[str, set[str]] = {}
    for pod in _pods(real_k8s, "placed-"):
        slice_id = pod["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"]
        slices.setdefault(slice_id, set()).add(_node_pool(real_k8s, pod["spec"]["nodeName"]))
    assert sorted(slices) == ["0", "1"], slices
    assert all(len(p) == 1 for p in slices.values()), slices  # one pool per slice
    assert slices["0"] != slices["1"], slices  # and not the same one


def test_a_job_no_node_can_take_says_why_and_fails_at_queue_timeout(real_k8s: ControlPlane):
    """A node selector no pool matches: the task log says why within a minute, in the
    scheduler's words, and ``queue_timeout`` ends the wait naming that reason."""
    log, lines = logger("nowhere")
    created = time.monotonic()
    thread, out = run(
        "nowhere", log, **HELLO,
        node_selector={POOL: "no-such-pool"}, queue_timeout=40,
    )  # fmt: skip
    said = lines.wait_for("unschedulable: 0/", timeout=60)
    assert time.monotonic() - created < 60
    assert "didn't match Pod's node affinity/selector" in said, said
    thread.join(120)
    failure = out["value"]
    assert isinstance(failure, BaseException), failure
    assert "queue_timeout (40s)" in str(failure), str(failure)
    assert "didn't match Pod's node affinity/selector" in str(failure), str(failure)


@pytest.fixture
def tainted_pool(real_k8s: ControlPlane) -> Iterator[str]:
    """The ``tpu-v5e-a`` pool's nodes with a taint of the platform's own (as a pool set aside
    for maintenance is), the other TPU pool cordoned: only a job that tolerates the taint
    finds room."""
    api = real_k8s.api()
    taken = {n.name for n in pools(NODES)["tpu-v5e-a"]}
    other = {n.name for n in pools(NODES)["tpu-v5e-b"]}
    merge = "application/merge-patch+json"

    def patch(name: str, spec: dict[str, Any]) -> None:
        api.request("PATCH", f"/api/v1/nodes/{name}", {"spec": spec}, merge)

    before = {n: api.get(f"/api/v1/nodes/{n}")["spec"].get("taints") or [] for n in taken}
    for name in taken:
        patch(name, {"taints": [*before[name], MAINTENANCE]})
    for name in other:
        patch(name, {"unschedulable": True})
    yield "tpu-v5e-a"
    for name in taken:
        patch(name, {"taints": before[name]})
    for name in other:
        patch(name, {"unschedulable": None})


def test_an_untolerated_taint_says_why_and_a_users_toleration_meets_it(
    real_k8s: ControlPlane, tainted_pool: str
):
    log, lines = logger("untolerated")
    thread, out = run("untolerated", log, **HELLO, queue_timeout=30)
    said = lines.wait_for("unschedulable: 0/", timeout=60)
    # The TPU pool tainted, the other cordoned, the GPU nodes' taint not the job's.
    assert "4 node(s) had untolerated taint(s)" in said, said
    assert "node(s) were unschedulable" in said, said
    thread.join(120)
    assert "untolerated taint" in str(out["value"]), out["value"]
    # The accelerator's toleration (the API server's) and the user's, together.
    for how, kwargs in (
        ("tolerations", {"tolerations": [TOLERATE_MAINTENANCE]}),
        ("override", {"pod_template_override": {"spec": {"tolerations": [TOLERATE_MAINTENANCE]}}}),
    ):
        log, _ = logger(f"tolerated-{how}")
        thread, out = run(f"tolerated-{how}", log, **HELLO,
                          on_finish_action="keep_jobset", **kwargs)  # fmt: skip
        thread.join(180)
        assert out["value"].result == "ok", out["value"]
        pools_used = {_node_pool(real_k8s, p["spec"]["nodeName"])
                      for p in _pods(real_k8s, f"tolerated-{how}-")}  # fmt: skip
        assert pools_used == {tainted_pool}, pools_used
