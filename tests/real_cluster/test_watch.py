"""The shared watch across a kube-apiserver restart: the job finishes while the API server is
down; its watch cache starts empty, so resuming the watch from the last resourceVersion it
saw meets ``410 Gone`` and the informer lists again. The completion is not missed."""

from __future__ import annotations

import time

from harness.real_cluster.control_plane import ControlPlane
from tests.support.real_cluster_jobs import logger, run


def pods_running(plane: ControlPlane, prefix: str) -> bool:
    pods = plane.api().get("/api/v1/namespaces/default/pods")["items"]
    mine = [p for p in pods if p["metadata"]["name"].startswith(prefix)]
    return len(mine) == 2 and all(p["status"].get("phase") == "Running" for p in mine)


def test_a_completion_during_an_api_server_restart_is_not_missed(real_k8s: ControlPlane, tmp_path):
    gate = tmp_path / "gate"
    log, lines = logger("watch")
    thread, out = run(
        "watch", log, entrypoint="gated_train:hold_until", entrypoint_kwargs={"gate": str(gate)},
        shared=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not pods_running(real_k8s, "watch-") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pods_running(real_k8s, "watch-")
    real_k8s.stop_apiserver()
    gate.touch()  # the processes end while no one can hear
    seen = [tmp_path / f"gate.seen-{i}" for i in range(2)]
    deadline = time.monotonic() + 60
    while not all(p.exists() for p in seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(p.exists() for p in seen)  # both functions returned while the API was down
    real_k8s.start_apiserver()
    thread.join(120)
    outcome = out["value"]
    assert not isinstance(outcome, BaseException), (outcome, lines.lines)
    assert outcome.result == {"processes": 2, "gate": str(gate)}
