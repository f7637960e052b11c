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

import re
from typing import Any

from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.runtime.env import LOCAL_CHECKPOINT_DIR_ENV

VOLUME = "jax-local-checkpoints"
MOUNT_PATH = "/mnt/jax-local-checkpoints"
MTC_EXTRA = "multi_tier_checkpointing"
MTC_DRIVER = "multitier-checkpoint.csi.storage.gke.io"  # xpk's, with --mtc-enabled
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
GIB = 2**30
# RAM per VM of the machine types whose memory Google documents beside them (GB as written
# there): https://cloud.google.com/tpu/docs/v5e ("VM types"), .../tpu/docs/v6e ("DRAM per host").
HOST_MEMORY_BYTES = {
    "ct5lp-hightpu-1t": 48 * 10**9,
    "ct5lp-hightpu-4t": 192 * 10**9,
    "ct5lp-hightpu-8t": 384 * 10**9,
    "ct6e-standard-8t": 1536 * GIB,
}


def size_bytes(value: object) -> int:
    """``local_checkpoint_size`` in bytes: a Kubernetes memory quantity such as ``"64Gi"``."""
    match = _SIZE.match(value) if isinstance(value, str) else None
    number = float(match.group(1)) if match else 0.0
    if not match or number <= 0:
        raise ValueError(
            f"local_checkpoint_size must be a positive Kubernetes memory quantity such as "
            f"'64Gi' or '500M', got {value!r}."
        )
    unit = match.group(2) or ""
    return int(number * (_BINARY.get(unit) or _DECIMAL[unit]))


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
    memory = HOST_MEMORY_BYTES.get(accelerator.machine_type)
    if memory is not None and size_bytes(size) >= memory:
        raise ValueError(
            f"local_checkpoint_size={size!r} does not fit in the memory of a "
            f"{accelerator.machine_type} host ({memory / GIB:.0f} GiB), which also holds the "
            "program: give a smaller size (a checkpoint's per-host shard, with room for two)."
        )


def _limit_bytes(limit: object) -> float:
    """A memory limit in bytes; infinite when there is none, or one this module does not
    read (Kubernetes checks its syntax)."""
    try:
        return size_bytes(limit) if isinstance(limit, str) else float("inf")
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
