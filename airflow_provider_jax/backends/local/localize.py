"""Move a JobSet's coordinators onto this machine: 127.0.0.1, at ports free right now.

Shared by the local backend and the test cluster's kubelet, which run pods as local processes.
"""

from __future__ import annotations

import copy
import socket
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.runtime.env import (
    COORDINATOR_ADDRESS_ENV,
    COORDINATOR_IP_ENV,
    COORDINATOR_PORT_ENV,
    MEGASCALE_COORDINATOR_ADDRESS_ENV,
    MEGASCALE_PORT_ENV,
)

LOCALHOST = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now (held together, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind((LOCALHOST, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def local_coordinates(coordinator_port: int, megascale_port: int) -> dict[str, str]:
    """The coordination env a process on 127.0.0.1 is given, at the given ports."""
    return {
        COORDINATOR_ADDRESS_ENV: f"{LOCALHOST}:{coordinator_port}",
        COORDINATOR_IP_ENV: LOCALHOST,
        COORDINATOR_PORT_ENV: str(coordinator_port),
        MEGASCALE_COORDINATOR_ADDRESS_ENV: LOCALHOST,
        MEGASCALE_PORT_ENV: str(megascale_port),
    }


def localize(
    manifest: Mapping[str, Any], coordinator_port: int, megascale_port: int
) -> dict[str, Any]:
    """A copy of ``manifest`` whose coordinators are on 127.0.0.1, at the given ports."""
    rewrites = local_coordinates(coordinator_port, megascale_port)
    local = copy.deepcopy(dict(manifest))
    for rjob in local["spec"]["replicatedJobs"]:
        for container in rjob["template"]["spec"]["template"]["spec"]["containers"]:
            for item in container.get("env", []):
                if item["name"] in rewrites:
                    item["value"] = rewrites[item["name"]]
    return local
