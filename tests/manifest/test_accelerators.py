from __future__ import annotations

import pytest

from airflow_provider_jax.manifest.accelerators import (
    GPU_ACCELERATOR_LABEL,
    INSTANCE_TYPE_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL,
    check_multislice,
    parse_gpu,
    parse_tpu,
    tpu_names,
)
from tests.support.tpu_table import TPU_TABLE, XPK_ROWS

GPU_TABLE = [
    ("l4", "nvidia-l4"),
    ("a100", "nvidia-tesla-a100"),
    ("a100-80gb", "nvidia-a100-80gb"),
    ("h100", "nvidia-h100-80gb"),
    ("h100-mega", "nvidia-h100-mega-80gb"),
    ("h200", "nvidia-h200-141gb"),
    ("b200", "nvidia-b200"),
]


@pytest.mark.parametrize(("name", "gke", "topology", "hosts", "per_host", "machine"), TPU_TABLE)
def test_tpu_table(name, gke, topology, hosts, per_host, machine):
    for spelling in (name, f"tpu-{name}", f"tpu-{name.split('-')[0]}-{topology}", name.upper()):
        acc = parse_tpu(spelling)
        assert acc.kind == "tpu"
        assert acc.name == f"tpu-{name}"
        assert acc.topology == topology
        assert (acc.hosts, acc.chips_per_host) == (hosts, per_host)
        assert acc.chips == hosts * per_host
        assert acc.machine_type == machine
        selector = {TPU_ACCELERATOR_LABEL: gke, TPU_TOPOLOGY_LABEL: topology}
        if topology == "2x4":  # both VM sizes carry this topology: the machine type decides
            selector[INSTANCE_TYPE_LABEL] = machine
        assert dict(acc.node_selector) == selector
        assert acc.resource_name == "google.com/tpu"


def test_core_count_names_for_v4_and_v5p():
    # v4 and v5p names count TensorCores (2 per chip); v5e and v6e names count chips.
    assert parse_tpu("v5p-8").chips == 4
    assert parse_tpu("v6e-8").chips == 8


@pytest.mark.parametrize("generation", ["v5litepod", "v6e"])
def test_two_by_four_is_two_vms_unless_one_8_chip_vm_is_asked_for(generation):
    assert parse_tpu(f"tpu-{generation}-2x4").machine_type.endswith("-4t")
    acc = parse_tpu(f"tpu-{generation}-2x4", chips_per_host=8)
    assert (acc.hosts, acc.chips_per_host, acc.chips) == (1, 8, 8)
    assert acc.node_selector[INSTANCE_TYPE_LABEL] == acc.machine_type
    assert acc.machine_type.endswith("-8t")


def test_v5e_alias():
    assert parse_tpu("tpu-v5e-16") == parse_tpu("tpu-v5litepod-16")


@pytest.mark.parametrize("model,label", GPU_TABLE)
def test_gpu_table(model, label):
    for spelling in (model, f"gpu-{model}", label):
        acc = parse_gpu(spelling, gpus_per_node=8, num_nodes=4)
        assert acc.kind == "gpu"
        assert dict(acc.node_selector) == {GPU_ACCELERATOR_LABEL: label}
        assert (acc.hosts, acc.chips_per_host, acc.chips) == (4, 8, 32)
        assert acc.resource_name == "nvidia.com/gpu"


def test_shapes_gke_does_not_offer_name_the_rule_and_the_closest():
    with pytest.raises(ValueError, match=r"no v6e slice has 17 chips\. Closest: 'tpu-v6e-16'"):
        parse_tpu("tpu-v6e-17")
    with pytest.raises(ValueError, match=r"'v5litepod-4x5'.*GKE offers only.*tpu-v5litepod-4x4"):
        parse_tpu("v5litepod-4x5")
    with pytest.raises(ValueError, match=r"non-decreasing order.*tpu-v5p-4x4x8"):
        parse_tpu("v5p-8x4x4")  # v4 takes any order, v5p does not
    assert parse_tpu("v4-8x4x4").hosts == 32
    with pytest.raises(ValueError, match=r"multiple of 4.*Closest valid shapes: 'tpu-v5p-4x4x8'"):
        parse_tpu("v5p-4x4x10")
    with pytest.raises(ValueError, match=r"largest slice is 140 4x4x4 cubes \(8960 chips\)"):
        parse_tpu("v5p-16x16x64")
    with pytest.raises(ValueError, match=r"no v5p slice has 12 TensorCores"):
        parse_tpu("v5p-12")


def test_multislice_needs_multi_host_slices():
    with pytest.raises(ValueError, match="single-host slice, and GKE's multislice"):
        check_multislice(parse_tpu("tpu-v5p-8"), 2)
    check_multislice(parse_tpu("tpu-v5p-8"), 1)
    check_multislice(parse_tpu("tpu-v5p-16"), 4)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("h100", "is a GPU; use JaxGpuJobOperator"),
        ("tpu-v6e-3x3", "not a v6e slice GKE offers"),
        ("v6e-8x", "Unknown TPU accelerator"),
        ("tpu-v9z-8", "Unknown TPU accelerator"),
        ("", "Unknown TPU accelerator"),
    ],
)
def test_bad_tpu(value, message):
    with pytest.raises(ValueError, match=message):
        parse_tpu(value)


def test_bad_layouts():
    with pytest.raises(ValueError, match=r"valid chips_per_host for it: \[4\]"):
        parse_tpu("v6e-16", chips_per_host=8)
    with pytest.raises(ValueError, match="not gpus_per_node=3"):
        parse_gpu("h100", gpus_per_node=3, num_nodes=1)
    with pytest.raises(ValueError, match="is a TPU; use JaxTpuSliceOperator"):
        parse_gpu("tpu-v6e-8", gpus_per_node=8, num_nodes=1)
    with pytest.raises(ValueError, match=r"Unknown GPU accelerator 'h1000'.*'h100'"):
        parse_gpu("h1000", gpus_per_node=8, num_nodes=1)
    with pytest.raises(ValueError, match="means 8 GPUs per node, not gpus_per_node=4"):
        parse_gpu("h100-80gb-8", gpus_per_node=4, num_nodes=2)
    with pytest.raises(ValueError, match="needs gpus_per_node"):
        parse_gpu("h100", gpus_per_node=None, num_nodes=2)
    for n in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="must be a positive integer"):
            parse_gpu("h100", gpus_per_node=8, num_nodes=n)
    with pytest.raises(TypeError):
        parse_tpu(16)  # type: ignore[arg-type]


def test_every_listed_name_parses():
    for name in tpu_names():
        parse_tpu(name)


def test_ironwood_and_large_3d_slices():
    acc = parse_tpu("tpu7x-16")
    assert (acc.topology, acc.hosts, acc.chips_per_host) == ("2x2x2", 2, 4)
    assert acc.machine_type == "tpu7x-standard-4t" and acc.name == "tpu7x-16"
    assert parse_tpu("tpu-v7x-16") == acc
    for name, hosts in [("v5p-4x4x12", 48), ("v5p-384", 48), ("v4-8x8x12", 192)]:
        assert parse_tpu(name).hosts == hosts
    assert parse_tpu("v5p-16x16x24").chips == 6144


def test_every_xpk_tpu_device_type_parses_to_xpks_facts():
    """All of xpk's TPU device types (2,020 in xpk 1.16), in its spelling and ours."""
    tpus = [row for row in XPK_ROWS if row["kind"] == "tpu"]
    assert len(tpus) >= 200
    for row in tpus:
        for spelling in (row["device_type"], "tpu-" + row["device_type"]):
            acc = parse_tpu(spelling)
            facts = (acc.topology, acc.hosts, acc.chips_per_host, acc.machine_type)
            want = (row["topology"], row["vms_per_slice"], row["chips_per_vm"])
            assert facts == (*want, row["gce_machine_type"]), spelling
            assert acc.node_selector[TPU_ACCELERATOR_LABEL] == row["gke_accelerator"]
            assert acc.node_selector[TPU_TOPOLOGY_LABEL] == row["topology"]


def test_every_xpk_gpu_device_type_parses_to_xpks_facts():
    gpus = [row for row in XPK_ROWS if row["kind"] == "gpu"]
    for row in gpus:
        acc = parse_gpu(row["device_type"], gpus_per_node=None, num_nodes=2)
        assert acc.chips_per_host == row["chips_per_vm"], row
        assert acc.machine_type == row["gce_machine_type"], row
        assert acc.node_selector[GPU_ACCELERATOR_LABEL] == row["gke_accelerator"], row
        want_direct = None if row["gpu_direct"] == "fastrak" else row["gpu_direct"]
        assert acc.gpu_direct == want_direct, row
