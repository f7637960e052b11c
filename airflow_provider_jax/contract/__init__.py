"""What the operator hands every backend and gets back, and how a job is waited on: the one
interface between the operators, the backends and the trigger. Its own layer, below the
backends and the triggers that both use it."""

from airflow_provider_jax.contract.backend import (
    BACKEND_TRAITS,
    BACKENDS,
    CLUSTER_DEADLINE_GRACE_S,
    DEFAULT_MAX_RESULT_BYTES,
    ON_FINISH_ACTIONS,
    RESUME_SETTLE_S,
    Backend,
    BackendTraits,
    ClusterSettings,
    Deferral,
    JobSettings,
    Outcome,
    Started,
    cluster_deadline_seconds,
    get_backend,
    log_deadline,
    resolve_backend,
    try_deadline,
)
from airflow_provider_jax.contract.watch_options import WatchOptions

__all__ = [
    "BACKENDS",
    "BACKEND_TRAITS",
    "CLUSTER_DEADLINE_GRACE_S",
    "DEFAULT_MAX_RESULT_BYTES",
    "ON_FINISH_ACTIONS",
    "RESUME_SETTLE_S",
    "Backend",
    "BackendTraits",
    "ClusterSettings",
    "Deferral",
    "JobSettings",
    "Outcome",
    "Started",
    "WatchOptions",
    "cluster_deadline_seconds",
    "get_backend",
    "log_deadline",
    "resolve_backend",
    "try_deadline",
]
