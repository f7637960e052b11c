"""Names of the environment variables that tell every JAX process where it stands.

Stdlib only, like the rest of the runtime: the launcher and the JobSet builder write these,
the runtime reads them. (The call itself travels as described in ``call.py``.)
"""

from __future__ import annotations

# Set for every pod by the JobSet builder (the process id by its `sh` prelude): declared in
# jax_cluster.py, since a command= process gets that module alone.
from airflow_provider_jax.runtime.jax_cluster import (
    COORDINATOR_ADDRESS_ENV as COORDINATOR_ADDRESS_ENV,
)
from airflow_provider_jax.runtime.jax_cluster import NUM_PROCESSES_ENV as NUM_PROCESSES_ENV
from airflow_provider_jax.runtime.jax_cluster import PROCESS_ID_ENV as PROCESS_ID_ENV
from airflow_provider_jax.runtime.jax_cluster import REQUIRE_JOIN_ENV as REQUIRE_JOIN_ENV

OUTPUT_DIR_ENV = "AIRFLOW_JAX_OUTPUT_DIR"
TERMINATION_PATH_ENV = "AIRFLOW_JAX_TERMINATION_MESSAGE_PATH"
DEFAULT_TERMINATION_PATH = "/dev/termination-log"  # Kubernetes' default terminationMessagePath

RESTART_ATTEMPT_ENV = "AIRFLOW_JAX_RESTART_ATTEMPT"  # JobSet's recreations of the pod
IN_PLACE_ATTEMPT_ENV = "AIRFLOW_JAX_IN_PLACE_ATTEMPT"  # ... and its in-place restarts
# "in_place" when the pods restart in place (restart_strategy): SIGTERM then means "restart".
RESTART_STRATEGY_ENV = "AIRFLOW_JAX_RESTART_STRATEGY"
# The host-local checkpoint tier's folder (local_checkpoint_size), when the job has one.
LOCAL_CHECKPOINT_DIR_ENV = "AIRFLOW_JAX_LOCAL_CHECKPOINT_DIR"
# Why a JobSet was made at its size (min_slices): "shrunk" or "grew", for runtime.start_reason().
RESIZE_REASON_ENV = "AIRFLOW_JAX_RESIZED"
SHRUNK, GREW = "shrunk", "grew"
# Where a pod sits, from the downward API; not JAX_*: jax reads JAX_SLICE_INDEX itself.
HOSTS_PER_SLICE_ENV = "AIRFLOW_JAX_HOSTS_PER_SLICE"
SLICE_INDEX_ENV = "AIRFLOW_JAX_SLICE_INDEX"
HOST_INDEX_ENV = "AIRFLOW_JAX_HOST_INDEX"
# Multislice (DCN) coordination, read by libtpu.
MEGASCALE_COORDINATOR_ADDRESS_ENV = "MEGASCALE_COORDINATOR_ADDRESS"
MEGASCALE_NUM_SLICES_ENV = "MEGASCALE_NUM_SLICES"
MEGASCALE_SLICE_ID_ENV = "MEGASCALE_SLICE_ID"
MEGASCALE_PORT_ENV = "MEGASCALE_PORT"
# What xpk- and MaxText-style GPU scripts read: the leader's host without a port, the port,
# the process count and this process's rank.
COORDINATOR_IP_ENV = "JAX_COORDINATOR_IP"
COORDINATOR_PORT_ENV = "JAX_COORDINATOR_PORT"
NNODES_ENV = "NNODES"
NODE_RANK_ENV = "NODE_RANK"
# Set in a Pathways head: this process is the single controller (no jax.distributed).
PATHWAYS_ENV = "AIRFLOW_JAX_PATHWAYS"
