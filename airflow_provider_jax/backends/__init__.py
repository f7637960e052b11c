"""Where a JAX job runs: one small interface (:mod:`.contract`), two implementations
(``kubernetes``, ``local/``). This package's own namespace only re-exports the contract, so
``from airflow_provider_jax.backends import JobSettings`` keeps working."""

from airflow_provider_jax.backends.contract import (
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
from airflow_provider_jax.backends.watch_options import WatchOptions

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
