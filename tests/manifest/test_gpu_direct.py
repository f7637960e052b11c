"""Multi-node GPU pods get the GPUDirect networking of their machine type, shaped field by
field as xpk's own decorators shape it (recorded in tests/fixtures/xpk/gpudirect_pods.json
by tests/fixtures/xpk/record.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.operators import JaxGpuJobOperator

XPK = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "xpk" / "gpudirect_pods.json").read_text()
)
INTERFACES = "networking.gke.io/interfaces"


def pod(accelerator: str, num_nodes: int = 2, **kwargs: Any) -> tuple[dict, dict[str, Any]]:
    op = JaxGpuJobOperator(
        task_id="t",
        accelerator=accelerator,
        num_nodes=num_nodes,
        image="us-docker.pkg.dev/p/r/jax:1",
        command=["python3", "train.py"],
        **kwargs,
    )
    manifest = build_jobset(op.build_spec(name="job", rendered=False))
    return manifest, manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]


@pytest.mark.parametrize(
    ("accelerator", "stack"),
    [
        ("h100-80gb-8", "tcpx"),  # a3-highgpu-8g
        ("h100-mega-80gb-8", "tcpxo"),  # a3-megagpu-8g
        ("h200-141gb-8", "rdma"),  # a3-ultragpu-8g
        ("b200-8", "rdma"),  # a4-highgpu-8g
        ("gb200-4", "rdma"),  # a4x-highgpu-4g
    ],
)
def test_networking_matches_xpks_decorators_field_by_field(
    accelerator: str, stack: str, validate_jobset
) -> None:
    manifest, ours = pod(accelerator)
    validate_jobset(manifest)
    theirs = json.loads(json.dumps(XPK["pods"][stack]))  # a copy: the pops below mutate it
    ours_notes, their_notes = ours["metadata"]["annotations"], theirs["metadata"]["annotations"]
    assert json.loads(ours_notes.pop(INTERFACES)) == json.loads(their_notes.pop(INTERFACES))
    assert ours_notes == their_notes
    spec, their_spec = ours["spec"], theirs["spec"]
    assert spec["volumes"] == their_spec["volumes"]
    assert spec.get("initContainers", []) == their_spec.get("initContainers", [])
    assert all(t in spec["tolerations"] for t in their_spec["tolerations"])
    (container,) = spec["containers"]
    (their_container,) = their_spec["containers"]
    assert all(e in container["env"] for e in their_container["env"])
    assert container["volumeMounts"] == their_container["volumeMounts"]
    assert "hostNetwork" not in spec  # its NICs come through multi-networking instead


def test_a_clusters_own_network_names_and_opting_out() -> None:
    nets = ["default", "gpu-a", "gpu-b", "gpu-c", "gpu-d"]
    _, ours = pod("h100-80gb-8", gpu_networks=nets)
    interfaces = json.loads(ours["metadata"]["annotations"][INTERFACES])
    assert [i["network"] for i in interfaces] == nets
    _, plain = pod("h100-80gb-8", gpu_networking="none")
    assert "annotations" not in plain["metadata"] and "volumes" not in plain["spec"]
    assert plain["spec"]["hostNetwork"] is True  # xpk's plain GPU template


def test_single_node_jobs_and_machines_without_gpudirect_stay_plain() -> None:
    _, single = pod("h100-80gb-8", num_nodes=1)
    assert "initContainers" not in single["spec"] and "hostNetwork" not in single["spec"]
    _, l4 = pod("l4-4")
    assert "initContainers" not in l4["spec"]
    assert (l4["spec"]["hostNetwork"], l4["spec"]["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
