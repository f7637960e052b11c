"""What a test's pods are given on the real nodes: the runtime image the nodes hold (JAX, the
pod-side runtime, the training code), where it holds a program, and a folder of this machine
shared with the test (``harness/real_cluster/host_folder.py``)."""

from __future__ import annotations

from harness.real_cluster.host_folder import shared_folder
from harness.real_cluster.images import CODE_ROOT, RUNTIME_IMAGE

__all__ = ["RUNTIME_IMAGE", "program", "shared_folder"]


def program(relative: str) -> str:
    """Where the runtime image holds the repository's file ``relative`` (a program a test
    runs with ``command=``)."""
    return f"{CODE_ROOT}/{relative}"
