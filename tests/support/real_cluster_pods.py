"""What a test's pods are given on the real nodes: the runtime image the nodes hold (JAX, the
pod-side runtime, the training code) and a folder of this machine shared with the test.

The folder is a ``hostPath`` volume mounted at its own path in the JAX container: every node
of the test cluster is this machine, so a gate file the test touches, or a result and
checkpoints a job writes, are seen on both sides, as a job's hosts share a bucket or a file
system on GKE (``output_dir``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.real_cluster.images import CODE_ROOT, RUNTIME_IMAGE

__all__ = ["RUNTIME_IMAGE", "program", "shared_folder"]


def shared_folder(path: Path | str) -> dict[str, list[dict[str, Any]]]:
    """``volumes`` and ``volume_mounts`` arguments that mount ``path`` at ``path``."""
    return {
        "volumes": [{"name": "test-shared", "hostPath": {"path": str(path), "type": "Directory"}}],
        "volume_mounts": [{"name": "test-shared", "mountPath": str(path)}],
    }


def program(relative: str) -> str:
    """Where the runtime image holds the repository's file ``relative`` (a program a test
    runs with ``command=``)."""
    return f"{CODE_ROOT}/{relative}"
