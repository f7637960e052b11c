"""Whether this machine has room for more real nodes: each node's kubelet and containerd hold
inotify instances (file watchers), and Linux gives a user ``fs.inotify.max_user_instances`` of
them (128 by default), all of the user's processes together: two clusters' nodes, a Docker
engine and a browser share them. A node that cannot get one fails at start (cAdvisor's
``inotify_init: too many open files``); this says so before, in words."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from harness.real_cluster.components import ControlPlaneError

LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")
# A node's, counted: the kubelet 6 (its client CA, serving certificate, cgroups, device plugins'
# and plugins' folders, ...), containerd 1 (its CNI folder); one to spare.
PER_NODE = 8


def inotify_holders(uid: int | None = None) -> Counter[str]:
    """How many inotify instances the processes of ``uid`` (this process's) hold, by command
    name (``/proc/<pid>/comm``): who to stop when a node cannot start."""
    uid = os.getuid() if uid is None else uid
    held: Counter[str] = Counter()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.stat().st_uid != uid:
                continue
            count = sum(
                1 for fd in (proc / "fd").iterdir() if os.readlink(fd) == "anon_inode:inotify"
            )
            if count:
                held[(proc / "comm").read_text().strip()] += count
        except OSError:
            continue  # gone, or not ours to read
    return held


def check_room_for(nodes: int) -> None:
    """Refuse to start ``nodes`` nodes that would run out of inotify instances."""
    limit = int(LIMIT.read_text())
    holders = inotify_holders()
    held = sum(holders.values())
    if held + nodes * PER_NODE > limit:
        most = ", ".join(f"{name} {count}" for name, count in holders.most_common(6))
        raise ControlPlaneError(
            f"{nodes} nodes need about {nodes * PER_NODE} inotify instances, and this user's "
            f"processes hold {held} of fs.inotify.max_user_instances={limit} (most: {most}): "
            "stop another cluster (make cluster-down), or raise the limit (sysctl -w "
            "fs.inotify.max_user_instances=512, as kind's docs ask for its nodes)"
        )
