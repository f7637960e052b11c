"""``local_checkpoint_size``: a per-host checkpoint tier in RAM, beside the persistent one in
``<output_dir>/checkpoints``. Pure: no I/O.

Restoring from host memory (or a peer's copy) takes seconds where GCS takes minutes at scale;
Orbax's emergency checkpoint manager writes both tiers (``runtime/multi_tier.py``). The tier is
an ``emptyDir`` in memory, which survives an in-place restart of the pod and goes with it.
On GKE clusters with multi-tier checkpointing enabled, the connection extra
``multi_tier_checkpointing`` mounts GKE's CSI volume instead, as xpk does with
``--ramdisk-directory`` and ``--mtc-enabled`` (its ``core/docker_resources.py``).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.runtime.env import LOCAL_CHECKPOINT_DIR_ENV

VOLUME = "jax-local-checkpoints"
MOUNT_PATH = "/mnt/jax-local-checkpoints"
MTC_EXTRA = "multi_tier_checkpointing"
MTC_DRIVER = "multitier-checkpoint.csi.storage.gke.io"  # xpk's, with --mtc-enabled
GIB = 2**30
GB = 10**9
# RAM per VM of every machine type in the accelerator tables (manifest/accelerators/), as
# Google documents it beside the machine type: TPU (https://cloud.google.com/tpu/docs/v4,
# .../v5e "VM types", .../v5p, .../v6e, .../tpu7x "RAM (GB) (4-chip VM)") and GPU
# (https://cloud.google.com/compute/docs/gpus: the A2, A3, A4, A4X and G2 tables). A test
# fails when a machine type of the tables has no row. Rows marked "by chip share" have no
# published figure: they are the 4-chip VM's RAM by the VM's share of its chips, which is
# exact where both are published (v5e: 48 GB a chip).
HOST_MEMORY_BYTES = {
    "ct4p-hightpu-4t": 407 * GB,
    "ct5p-hightpu-4t": 448 * GB,
    "ct5lp-hightpu-1t": 48 * GB,
    "ct5lp-hightpu-4t": 192 * GB,
    "ct5lp-hightpu-8t": 384 * GB,
    "ct6e-standard-1t": 176 * GB,
    "ct6e-standard-4t": 720 * GB,
    "ct6e-standard-8t": 1536 * GIB,
    "tpu7-standard-1t": 240 * GB,  # by chip share
    "tpu7-standard-4t": 960 * GB,  # as tpu7x's
    "tpu7x-standard-1t": 240 * GB,  # by chip share
    "tpu7x-standard-4t": 960 * GB,
    "a2-highgpu-1g": 85 * GB,
    "a2-highgpu-2g": 170 * GB,
    "a2-highgpu-4g": 340 * GB,
    "a2-highgpu-8g": 680 * GB,
    "a2-megagpu-16g": 1360 * GB,
    "a2-ultragpu-1g": 170 * GB,
    "a2-ultragpu-2g": 340 * GB,
    "a2-ultragpu-4g": 680 * GB,
    "a2-ultragpu-8g": 1360 * GB,
    "a3-highgpu-1g": 234 * GB,
    "a3-highgpu-2g": 468 * GB,
    "a3-highgpu-4g": 936 * GB,
    "a3-highgpu-8g": 1872 * GB,
    "a3-megagpu-8g": 1872 * GB,
    "a3-ultragpu-8g": 2952 * GB,
    "a4-highgpu-8g": 3968 * GB,
    "a4x-highgpu-4g": 884 * GB,
    "g2-standard-12": 48 * GB,
    "g2-standard-24": 96 * GB,
    "g2-standard-48": 192 * GB,
    "g2-standard-96": 384 * GB,
}


def size_bytes(value: object) -> float:
    """``local_checkpoint_size`` in bytes: a Kubernetes memory quantity such as ``"64Gi"``."""
    return syntax.byte_size("local_checkpoint_size", value)


def check_fits(size: str, accelerator: Accelerator, memory_limit: object = None) -> None:
    """Refuse a tier larger than the host's memory, where its machine type's is known, or than
    the container's memory limit (an in-memory ``emptyDir`` counts against it): the pod would
    be evicted or OOM-killed the moment the tier filled."""
    if size_bytes(size) >= _limit_bytes(memory_limit):
        raise ValueError(
            f"local_checkpoint_size={size!r} is not below the container's memory limit "
            f"({memory_limit}), which an in-memory tier counts against: give a smaller size, "
            "or raise container_resources['limits']['memory']."
        )
    memory = HOST_MEMORY_BYTES.get(accelerator.machine_type, float("inf"))
    if size_bytes(size) >= memory:
        raise ValueError(
            f"local_checkpoint_size={size!r} does not fit in the memory of a "
            f"{accelerator.machine_type} host ({memory / GIB:.0f} GiB), which also holds the "
            "program: give a smaller size (a checkpoint's per-host shard, with room for two)."
        )


def _limit_bytes(limit: object) -> float:
    """A memory limit in bytes; infinite when there is none, or one this module does not
    read (Kubernetes checks its syntax)."""
    try:
        return syntax.byte_size("limit", limit, unit_required=False)
    except ValueError:
        return float("inf")


def volume(size: str, multi_tier: bool) -> dict[str, Any]:
    if multi_tier:
        return {"name": VOLUME, "csi": {"driver": MTC_DRIVER}}
    return {"name": VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}


def mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": MOUNT_PATH}


def env() -> list[dict[str, str]]:
    return [{"name": LOCAL_CHECKPOINT_DIR_ENV, "value": MOUNT_PATH}]
