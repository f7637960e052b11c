"""A folder of this machine that a job's pods on the real nodes share with whoever started the
job (a test, a bench): a ``hostPath`` volume mounted at its own path in the JAX container.
Every node of the cluster is this machine, so a gate file the test touches, or the results,
step times and checkpoints a job writes, are seen on both sides, as a job's hosts share a
bucket or a file system on GKE (``output_dir``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def shared_folder(path: Path | str) -> dict[str, list[dict[str, Any]]]:
    """``volumes`` and ``volume_mounts`` arguments that mount ``path`` at ``path``."""
    return {
        "volumes": [{"name": "host-shared", "hostPath": {"path": str(path), "type": "Directory"}}],
        "volume_mounts": [{"name": "host-shared", "mountPath": str(path)}],
    }
