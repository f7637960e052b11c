"""The environment that tells every JAX process where the others are. Pure: no I/O.

``JAX_COORDINATOR_ADDRESS`` is ``host:port``, what ``jax.distributed.initialize()`` reads
itself. Scripts written for xpk or MaxText read the host and port apart
(``JAX_COORDINATOR_IP``, ``JAX_COORDINATOR_PORT``) with ``NNODES`` and ``NODE_RANK``; those
are set too, so such a ``command=`` runs unchanged.

The coordinator port keeps clear of what else binds on process 0's node under hostNetwork:
libtpu's process port (8476, which LeaderWorkerSet also injects as ``TPU_PROCESS_PORT``), JAX's
own Cloud TPU coordinator default (8482 since JAX 0.8), and the MegaScale (DCN) coordinator
(8080). Where another job's pod may share the node's network (a GPU pod that leaves GPUs free),
the port is derived from the JobSet's name, so two jobs there do not collide.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.manifest.jobset_api import (
    COMPLETION_INDEX_ANNOTATION,
    IN_PLACE_ATTEMPT_ANNOTATION,
    JOB_INDEX_LABEL,
    RESTART_ATTEMPT_LABEL,
)
from airflow_provider_jax.manifest.pod_command import SITE_ENV
from airflow_provider_jax.runtime.env import (
    COORDINATOR_ADDRESS_ENV,
    COORDINATOR_IP_ENV,
    COORDINATOR_PORT_ENV,
    HOST_INDEX_ENV,
    HOSTS_PER_SLICE_ENV,
    IN_PLACE_ATTEMPT_ENV,
    MEGASCALE_COORDINATOR_ADDRESS_ENV,
    MEGASCALE_NUM_SLICES_ENV,
    MEGASCALE_PORT_ENV,
    MEGASCALE_SLICE_ID_ENV,
    NNODES_ENV,
    NODE_RANK_ENV,
    NUM_PROCESSES_ENV,
    PROCESS_ID_ENV,
    RESTART_ATTEMPT_ENV,
    SLICE_INDEX_ENV,
)

DEFAULT_COORDINATOR_PORT = 8490
DEFAULT_MEGASCALE_PORT = 8080
SHARED_PORT_RANGE = (20000, 30000)  # below Linux's ephemeral ports (32768 and up)


# `$$` is Kubernetes' escape for `$` in command/args; sh then sees `$((...))`. In command=
# mode the provider's sitecustomize goes on PYTHONPATH (runtime/jax_cluster.py); where no
# temporary folder can be made, the program runs as it would without it.
#
# The variables the prelude computes are not in the container's env, so Kubernetes leaves a
# `$(JAX_PROCESS_ID)` in the command as written (it expands only the env's own names): the
# prelude then puts their values in, as Kubernetes does for the others, before it execs the
# program. POSIX sh only (an image's /bin/sh may be dash): `case` and `%%`/`#` patterns.
PRELUDE_EXPANDED = (PROCESS_ID_ENV, NODE_RANK_ENV)
PROCESS_ID_PRELUDE = (
    f'export {PROCESS_ID_ENV}="$$(({SLICE_INDEX_ENV} * {HOSTS_PER_SLICE_ENV} + {HOST_INDEX_ENV}))"; '
    f'export {NODE_RANK_ENV}="$${PROCESS_ID_ENV}"; '
    f'if [ -n "$${{{SITE_ENV}:-}}" ] && d="$$(mktemp -d 2>/dev/null)"; then '
    f'printf "%s" "$${SITE_ENV}" > "$$d/sitecustomize.py" && '
    'export PYTHONPATH="$$d$${PYTHONPATH:+:$$PYTHONPATH}"; fi; '
    r'x() { r=; while :; do case $$a in *"\$$($$1)"*) '
    r'r=$$r$${a%%"\$$($$1)"*}$$2; a=$${a#*"\$$($$1)"};; *) break;; esac; done; a=$$r$$a; }; '
    "for a; do "
    + "".join(f'x {name} "$${name}"; ' for name in PRELUDE_EXPANDED)
    + 'set -- "$$@" "$$a"; shift; done; '
    'exec "$$@"'
)
PRELUDE_ARGV0 = "jax-launch"

RESERVED_ENV = frozenset(
    {
        COORDINATOR_ADDRESS_ENV,
        COORDINATOR_IP_ENV,
        COORDINATOR_PORT_ENV,
        NUM_PROCESSES_ENV,
        PROCESS_ID_ENV,
        NNODES_ENV,
        NODE_RANK_ENV,
        HOSTS_PER_SLICE_ENV,
        SLICE_INDEX_ENV,
        HOST_INDEX_ENV,
        RESTART_ATTEMPT_ENV,
        IN_PLACE_ATTEMPT_ENV,
        MEGASCALE_COORDINATOR_ADDRESS_ENV,
        MEGASCALE_NUM_SLICES_ENV,
        MEGASCALE_SLICE_ID_ENV,
        MEGASCALE_PORT_ENV,
    }
)


def coordinator_port_for(name: str, requested: int | None, *, shared_host_network: bool) -> int:
    """``requested`` if given; else a port derived from ``name`` where the node's network may
    be shared with another job, else :data:`DEFAULT_COORDINATOR_PORT`."""
    if requested is not None:
        return requested
    if not shared_host_network:
        return DEFAULT_COORDINATOR_PORT
    low, high = SHARED_PORT_RANGE
    return low + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % (high - low)


@dataclass(frozen=True)
class Coordination:
    leader_host: str
    port: int
    num_processes: int
    hosts_per_slice: int
    num_slices: int
    megascale_port: int = DEFAULT_MEGASCALE_PORT


def field_env(name: str, path: str) -> dict[str, Any]:
    """An env entry read from the pod's own metadata (the downward API)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def coordination_env(c: Coordination) -> list[dict[str, Any]]:
    """The env every JAX process needs; the prelude turns it into JAX_PROCESS_ID."""
    slice_index = f"metadata.labels['{JOB_INDEX_LABEL}']"
    env: list[dict[str, Any]] = [
        {"name": COORDINATOR_ADDRESS_ENV, "value": f"{c.leader_host}:{c.port}"},
        {"name": COORDINATOR_IP_ENV, "value": c.leader_host},
        {"name": COORDINATOR_PORT_ENV, "value": str(c.port)},
        {"name": NUM_PROCESSES_ENV, "value": str(c.num_processes)},
        {"name": NNODES_ENV, "value": str(c.num_processes)},
        {"name": HOSTS_PER_SLICE_ENV, "value": str(c.hosts_per_slice)},
        field_env(SLICE_INDEX_ENV, slice_index),
        field_env(HOST_INDEX_ENV, f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"),
        # Lets training code tell a fresh start from a restart (e.g. to resume a checkpoint).
        field_env(RESTART_ATTEMPT_ENV, f"metadata.labels['{RESTART_ATTEMPT_LABEL}']"),
        # ... and, under restart_strategy="in_place", which restart its agent has reached.
        field_env(IN_PLACE_ATTEMPT_ENV, f"metadata.annotations['{IN_PLACE_ATTEMPT_ANNOTATION}']"),
    ]
    if c.num_slices > 1:
        env += [
            {"name": MEGASCALE_COORDINATOR_ADDRESS_ENV, "value": c.leader_host},
            {"name": MEGASCALE_NUM_SLICES_ENV, "value": str(c.num_slices)},
            {"name": MEGASCALE_PORT_ENV, "value": str(c.megascale_port)},
            field_env(MEGASCALE_SLICE_ID_ENV, slice_index),
        ]
    return env
