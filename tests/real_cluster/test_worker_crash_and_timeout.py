"""A worker that dies mid-wait, and a try that runs out of time, on the real control plane:
the retry reattaches to the JobSet its predecessor made (no second slice); a timeout deletes
the JobSet with the propagation policy we use, and the real garbage collector takes its
Jobs and pods."""

from __future__ import annotations

import time

from harness.real_cluster.control_plane import ControlPlane
from tests.support.real_cluster_jobs import logger, run

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


def names(plane: ControlPlane, path: str, prefix: str) -> list[str]:
    items = plane.api().get(path)["items"]
    return [i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith(prefix)]


def test_a_retried_worker_reattaches_instead_of_making_a_second_slice(real_k8s, tmp_path):
    gate = tmp_path / "gate"
    kwargs = {
        "entrypoint": "gated_train:hold_until",
        "entrypoint_kwargs": {"gate": str(gate)},
        "shared": tmp_path,
    }
    first_log, _ = logger("crashed")
    run("reattach", first_log, wait=False, **kwargs)  # this worker dies once it has submitted
    uid = real_k8s.api().get(JOBSETS)["items"][0]["metadata"]["uid"]
    retry_log, retry_lines = logger("retry")
    retried, out = run("reattach", retry_log, **kwargs)
    retry_lines.wait_for("Reattaching to JobSet default/reattach-")
    gate.touch()
    retried.join(120)
    assert out["value"].result["gate"] == str(gate)
    made = [j["metadata"]["uid"] for j in real_k8s.api().get(JOBSETS)["items"]]
    assert made in ([], [uid])  # the one slice, deleted once it ended


def test_a_timeout_deletes_the_jobset_and_the_garbage_collector_its_pods(real_k8s, tmp_path):
    log, _ = logger("timeout")
    thread, out = run(
        "timeout", log, deadline=time.time() + 15,
        entrypoint="gated_train:hold_until", entrypoint_kwargs={"gate": str(tmp_path / "never")},
    )  # fmt: skip
    thread.join(120)
    assert type(out["value"]).__name__ == "AirflowTaskTimeout", out
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        names(real_k8s, JOBSETS, "timeout-")
        or names(real_k8s, "/apis/batch/v1/namespaces/default/jobs", "timeout-")
        or names(real_k8s, "/api/v1/namespaces/default/pods", "timeout-")
    ):
        time.sleep(0.5)
    assert names(real_k8s, "/api/v1/namespaces/default/pods", "timeout-") == []
    assert names(real_k8s, "/apis/batch/v1/namespaces/default/jobs", "timeout-") == []
    assert names(real_k8s, JOBSETS, "timeout-") == []
