"""Move a JobSet's coordinators onto this machine: 127.0.0.1, at ports free right now.

Shared by the local backend and the test cluster's kubelet, which run pods as local processes.
"""

from __future__ import annotations

import copy
import itertools
import random
import socket
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.manifest.coordination import SHARED_PORT_RANGE
from airflow_provider_jax.runtime.env import (
    COORDINATOR_ADDRESS_ENV,
    COORDINATOR_IP_ENV,
    COORDINATOR_PORT_ENV,
    MEGASCALE_COORDINATOR_ADDRESS_ENV,
    MEGASCALE_PORT_ENV,
)

LOCALHOST = "127.0.0.1"


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now (held together, so they differ), below the
    kernel's ephemeral range. A port from that range (what binding port 0 gives) can be
    handed to a process's *outgoing* connection before the coordinator listens on it, and a
    client dialling 127.0.0.1:P from local port P connects to itself (TCP simultaneous
    open): the JAX processes then wait on a coordinator that is not there."""
    low, high = SHARED_PORT_RANGE[0], min(SHARED_PORT_RANGE[1], _ephemeral_low())
    held: list[socket.socket] = []
    try:
        start = random.randrange(low, high)  # every port once, from a random one
        for port in itertools.chain(range(start, high), range(low, start)):
            if len(held) == count:
                break
            candidate = socket.socket()
            try:
                candidate.bind((LOCALHOST, port))
            except OSError:
                candidate.close()
                continue
            held.append(candidate)
        if len(held) < count:
            raise RuntimeError(f"no {count} free ports on {LOCALHOST} in {low}-{high}")
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
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
