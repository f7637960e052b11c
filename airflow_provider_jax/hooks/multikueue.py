"""A MultiKueue manager's worker clusters, as the manager's Kubernetes connection maps them to
Airflow connections.

Pointed at a MultiKueue manager, the product submits the JobSet there and waits on the
manager's copy, whose status MultiKueue mirrors from the worker that runs it. The pods live
on that worker only: their logs, and the leader's result when there is no ``output_dir``, are
read through the worker's own connection, named in the manager connection's extra::

    {"multikueue_workers": {"worker-1": "k8s_worker_1", "worker-2": null}}

The keys are the ``MultiKueueCluster`` names (what ``Workload.status.clusterName`` says); a
null value declares a worker that Airflow cannot reach (``docs/multicluster.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.manifest.kubernetes_syntax import dns1123_subdomain

WORKERS_EXTRA = "multikueue_workers"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"  # a manager JobSet's spec.managedBy


def worker_connections(extras: Mapping[str, Any] | None) -> dict[str, str | None] | None:
    """The manager connection's worker mapping, or None when it declares none; a ValueError
    naming the extra when it is malformed."""
    mapping = (extras or {}).get(WORKERS_EXTRA)
    if mapping is None:
        return None
    if (
        not isinstance(mapping, Mapping)
        or not mapping
        or not all(
            _cluster_name(k) and (v is None or (isinstance(v, str) and v.strip() == v and v))
            for k, v in mapping.items()
        )
    ):
        raise ValueError(
            f"the Kubernetes connection's extra {WORKERS_EXTRA!r} must map each MultiKueue "
            "worker cluster (its MultiKueueCluster name, a DNS-1123 subdomain) to an Airflow "
            f'connection id or null ({{"worker-1": "k8s_w1", "worker-2": null}}), got '
            f"{mapping!r}. An empty mapping declares no worker: leave the extra out instead."
        )
    return dict(mapping)


def _cluster_name(name: object) -> bool:
    try:
        dns1123_subdomain(WORKERS_EXTRA, name)
    except ValueError:
        return False
    return True


def worker_cluster(extras: Mapping[str, Any] | None, worker: str) -> KubernetesCluster | None:
    """The worker's cluster, when the mapping names a connection for it."""
    conn_id = (worker_connections(extras) or {}).get(worker)
    return KubernetesCluster(conn_id=conn_id) if conn_id else None


def check_before_submit(
    extras: Mapping[str, Any] | None,
    output_dir: str | None,
    connection_exists: Callable[[str], bool],
) -> None:
    """Refuse, before anything is created, a job whose result could not come back: every
    mapped connection must exist, and without ``output_dir`` every worker needs one."""
    mapping = worker_connections(extras)
    if mapping is None:
        return
    if missing := sorted(c for c in mapping.values() if c and not connection_exists(c)):
        raise ValueError(
            f"the Kubernetes connection's extra {WORKERS_EXTRA!r} names connections that do "
            f"not exist: {missing}. Create them, or map those workers to null."
        )
    if output_dir is None and (unreachable := sorted(w for w, c in mapping.items() if not c)):
        raise ValueError(
            f"MultiKueue may run this job on worker cluster(s) {unreachable}, which no Airflow "
            f"connection reaches ({WORKERS_EXTRA}), and without output_dir the leader's "
            "result could only be read from its pod there. Give output_dir (the result goes "
            "to <output_dir>/result.json), or map those workers to connections."
        )


def unreadable_result(managed_by: str | None, extras: Mapping[str, Any] | None) -> str | None:
    """Why a JobSet just created (``managed_by``: its ``spec.managedBy`` as Kueue's webhook
    set it) could not return its result without ``output_dir``: it went to a MultiKueue
    queue, and the connection maps no worker; else None."""
    if managed_by != MULTIKUEUE_CONTROLLER or worker_connections(extras) is not None:
        return None
    return (
        f"its queue is a MultiKueue queue (Kueue set spec.managedBy={managed_by}): the pods "
        "run on a worker cluster, and the Kubernetes connection maps no worker to a "
        f"connection (its extra {WORKERS_EXTRA!r}), so without output_dir the leader's result "
        "could not come back. Give output_dir, or map the workers (docs/multicluster.md)."
    )
