"""Every kind of job we render meets the Pod Security Standard docs/security.md claims for it:
restricted (but for runAsNonRoot, the image's business) without the node's network, baseline
with the user's own volumes, and privileged only where the user asks for it or GKE's fast
networking needs it (hostNetwork for multi-host TPU, GPUDirect's host paths and daemon)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.secret_refs import SecretRef
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from tests.support.pod_security import baseline_violations, restricted_violations

COMMON: dict[str, Any] = {"image": "us-docker.pkg.dev/p/r/jax:1", "command": ["python3", "t.py"]}


def pods(op: Any) -> list[dict[str, Any]]:
    manifest = build_jobset(op.build_spec(name="job", rendered=False))
    return [r["template"]["spec"]["template"]["spec"] for r in manifest["spec"]["replicatedJobs"]]


JOBS = {
    "tpu-single-host": lambda **kw: JaxTpuSliceOperator(
        task_id="t", accelerator="tpu-v5p-8", **COMMON, **kw
    ),
    "tpu-multislice": lambda **kw: JaxTpuSliceOperator(
        task_id="t", accelerator="tpu-v6e-16", num_slices=2, **COMMON, **kw
    ),
    "gpu": lambda **kw: JaxGpuJobOperator(
        task_id="t", accelerator="h100", gpus_per_node=8, num_nodes=2, **COMMON, **kw
    ),
}


# Each job on the pod network (GPUDirect, the GPU operator's own argument, off as well).
POD_NETWORK = {job: {"host_network": False} for job in JOBS}
POD_NETWORK["gpu"]["gpu_networking"] = "none"


@pytest.mark.parametrize("job", JOBS)
def test_jobs_on_the_pod_network_meet_restricted_but_for_run_as_non_root(job: str) -> None:
    secrets = [SecretRef("env", "TOKEN", "wandb", "key"), SecretRef("volume", "/s", "gcs")]
    for pod in pods(JOBS[job](secrets=secrets, **POD_NETWORK[job])):
        assert restricted_violations(pod) == []


@pytest.mark.parametrize(
    ("job", "relaxed"),
    [
        ("tpu-single-host", []),
        ("tpu-multislice", ["hostNetwork=true"]),
        (
            "gpu",  # h100 on a3-highgpu-8g: GPUDirect-TCPX
            [
                *(
                    f"hostPath volume '{v}'"
                    for v in ("libraries", "sys", "proc-sys", "tcpx-socket")
                ),
                "container 'tcpx-daemon': adds capabilities ['NET_ADMIN']",
            ],
        ),
    ],
)
def test_gke_networking_relaxes_baseline_exactly_as_documented(job: str, relaxed: list) -> None:
    for pod in pods(JOBS[job]()):
        assert baseline_violations(pod) == relaxed


@pytest.mark.parametrize("job", JOBS)
def test_a_host_path_volume_leaves_baseline(job: str) -> None:
    volumes = [{"name": "data", "hostPath": {"path": "/mnt/disks/ssd0"}}]
    (pod, *_) = pods(JOBS[job](volumes=volumes, **POD_NETWORK[job]))
    assert baseline_violations(pod) == ["hostPath volume 'data'"]


def test_privileged_only_when_asked_and_then_says_so() -> None:
    (pod,) = pods(JOBS["tpu-single-host"](security_context={"privileged": True}))
    assert pod["containers"][0]["securityContext"] == {"privileged": True}
    assert baseline_violations(pod) == ["container 'jax': privileged"]
