"""The real nodes' cgroups (cgroup v1 here: one tree per controller). Each kubelet gets a
``cgroupRoot`` of its own, ``/airflow-jax/<run>/<node>``: a kubelet kills the pods and cgroups
it does not know under its root, so two nodes never share one. cgroup v1 is not namespaced, so
these folders outlive the node's processes: the harness removes them when a node stops, and the
reaper (``harness/reaper.py``) when a run is killed."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

MOUNT = Path("/sys/fs/cgroup")
TOP = "airflow-jax"
# What a kubelet on cgroup v1 requires of its cgroupRoot (every hierarchy it uses).
REQUIRED = ("cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer", "blkio", "systemd")


def hierarchies() -> list[Path]:
    """Every mounted hierarchy (v1 controllers, named ones, and the v2 ``unified`` one of a
    hybrid host, where runc also makes its folders)."""
    return sorted(p for p in MOUNT.iterdir() if (p / "cgroup.procs").exists())


def create(relative: str) -> None:
    """``relative`` in each controller's hierarchy; a new cpuset gets its parent's CPUs and
    memory nodes (an empty one can hold no process)."""
    for name in REQUIRED:
        base = MOUNT / name
        if not base.exists():
            continue
        path = base
        for part in Path(relative.strip("/")).parts:
            parent, path = path, path / part
            path.mkdir(exist_ok=True)
            if name == "cpuset":
                for setting in ("cpuset.cpus", "cpuset.mems"):
                    if not (path / setting).read_text().strip():
                        (path / setting).write_text((parent / setting).read_text())


def remove(relative: str, timeout: float = 15.0) -> list[str]:
    """Remove ``relative`` and everything under it in every hierarchy, deepest first, waiting
    up to ``timeout`` for the processes in them to be gone; then ``/airflow-jax`` itself if no
    other run uses it. What could not be removed, as paths (empty when all went)."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for base in hierarchies():
            top = base / relative.strip("/")
            if not top.exists():
                continue
            for folder, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(folder)
                except OSError:
                    left.append(folder)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for base in hierarchies():
        with contextlib.suppress(OSError):
            (base / TOP).rmdir()
    return left
