"""Where a JAX job runs: two implementations (``kubernetes``, ``local/``) of the interface in
:mod:`airflow_provider_jax.contract`, which this namespace re-exports so that
``from airflow_provider_jax.backends import JobSettings`` keeps working."""

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
