"""Real Kueue in front of the real JobSet controller: a job waiting on quota shows Kueue's own
message and its position (Kueue's visibility API, through the API server's aggregator); it
is admitted when quota frees; and a higher-priority job preempts a running one."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from airflow_provider_jax.backends import JobSettings, Outcome
from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.real_cluster.control_plane import ControlPlane

KUEUE = ("kueue.x-k8s.io", "v1beta2")


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := [line for line in self.lines if text in line]:
                return found[-1]
            time.sleep(0.1)
        raise AssertionError(
            f"no log line with {text!r} in {timeout}s; got:\n" + "\n".join(self.lines[-30:])
        )


@pytest.fixture(scope="module")
def queues(real_cluster: ControlPlane) -> client.CustomObjectsApi:
    api = client.CustomObjectsApi(config.new_client_from_config(str(real_cluster.kubeconfig())))
    group, version = KUEUE
    flavor = {
        "apiVersion": f"{group}/{version}",
        "kind": "ResourceFlavor",
        "metadata": {"name": "tpu-v5e"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}},
    }
    cluster_queue = {
        "apiVersion": f"{group}/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "tpu"},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [
                        {
                            "name": "tpu-v5e",
                            "resources": [{"name": "google.com/tpu", "nominalQuota": 8}],
                        }
                    ],
                }
            ],
        },
    }
    local_queue = {
        "apiVersion": f"{group}/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": "tpu-queue", "namespace": "default"},
        "spec": {"clusterQueue": "tpu"},
    }
    for name, value in (("low", 10), ("high", 1000)):
        api.create_cluster_custom_object(
            group,
            version,
            "workloadpriorityclasses",
            {
                "apiVersion": f"{group}/{version}",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    api.create_cluster_custom_object(group, version, "resourceflavors", flavor)
    api.create_cluster_custom_object(group, version, "clusterqueues", cluster_queue)
    api.create_namespaced_custom_object(group, version, "default", "localqueues", local_queue)
    return api  # fmt: skip


def start(name: str, gate: Path, log: logging.Logger, priority: str = "low", **kwargs: Any):
    op = JaxTpuSliceOperator(
        task_id=name, accelerator="tpu-v5litepod-8", image="img:1", backend="kubernetes",
        entrypoint="gated_train:hold_until", entrypoint_kwargs={"gate": str(gate)},
        queue_name="tpu-queue", labels={"kueue.x-k8s.io/priority-class": priority}, **kwargs,
    )  # fmt: skip
    manifest = op.dry_run()
    backend = KubernetesBackend(
        JobSettings(name=manifest["metadata"]["name"], namespace="default", log=log)
    )
    started = backend.start(manifest)
    # Each wait's trigger logs to the test's logger for that job (one triggerer, two tasks).
    started.handle._log = log
    outcome: dict[str, Outcome | BaseException] = {}

    def wait() -> None:
        try:
            outcome["value"] = backend.wait(started)
        except BaseException as err:
            outcome["value"] = err

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread, outcome


def logger(name: str) -> tuple[logging.Logger, Lines]:
    log = logging.getLogger(f"real-kueue.{name}")
    log.setLevel(logging.INFO)
    lines = Lines()
    log.addHandler(lines)
    return log, lines


def test_a_job_waits_on_quota_with_kueues_message_and_position_then_runs(
    queues, real_k8s, tmp_path
):
    first_log, first_lines = logger("first")
    first, first_out = start("first", tmp_path / "first-gate", first_log)
    first_lines.wait_for("Queue: admitted by Kueue")
    second_log, second_lines = logger("second")
    second, second_out = start("second", tmp_path / "second-gate", second_log)
    waiting = second_lines.wait_for("Queue: waiting: ")
    assert "insufficient unused quota for google.com/tpu in flavor tpu-v5e" in waiting, waiting
    second_lines.wait_for("position 1 in queue tpu-queue")  # first in line (1-based)
    (tmp_path / "first-gate").touch()
    first.join(60)
    assert first_out["value"].result["processes"] == 2
    second_lines.wait_for("Queue: admitted by Kueue")
    (tmp_path / "second-gate").touch()
    second.join(60)
    assert second_out["value"].result["gate"] == str(tmp_path / "second-gate")


def test_a_higher_priority_job_preempts_a_running_one(queues, real_k8s, tmp_path):
    low_log, low_lines = logger("low")
    low, low_out = start("low", tmp_path / "low-gate", low_log, "low")
    low_lines.wait_for("Queue: admitted by Kueue")
    high_log, high_lines = logger("high")
    high, high_out = start("high", tmp_path / "high-gate", high_log, "high")
    low_lines.wait_for("evicted by Kueue")
    high_lines.wait_for("Queue: admitted by Kueue")
    (tmp_path / "high-gate").touch()
    high.join(60)
    assert high_out["value"].result["processes"] == 2
    low_lines.wait_for("Queue: admitted by Kueue", timeout=60)  # readmitted once quota frees
    (tmp_path / "low-gate").touch()
    low.join(90)
    assert low_out["value"].result["processes"] == 2, low_out
