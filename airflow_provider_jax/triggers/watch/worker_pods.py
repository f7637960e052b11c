"""The pods of a JobSet that MultiKueue runs on a worker cluster.

On a MultiKueue manager the JobSet's status is a mirror and its pods are elsewhere: on the
worker that Kueue's ``Workload.status.clusterName`` names once admitted. Through the worker's
own Airflow connection (the manager connection's ``multikueue_workers`` extra) their logs
stream into the task log as on one cluster, and the leader's termination message is read the
moment the mirror says the JobSet completed, before MultiKueue deletes the worker's copy.
Without a connection for that worker, the task log says so once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_jax.hooks.api_errors import explain
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.hooks.multikueue import WORKERS_EXTRA, worker_cluster
from airflow_provider_jax.manifest import status
from airflow_provider_jax.triggers.watch.pod_logs import PodLogs


class WorkerPods:
    """Follows one JobSet's pods on the worker cluster MultiKueue dispatched it to."""

    def __init__(
        self,
        name: str,
        namespace: str,
        manager: AsyncJobSetOperations,
        extras: Mapping[str, Any] | None,
        log: Any,
        make_logs: Callable[[AsyncJobSetOperations], PodLogs | None],
    ) -> None:
        self.name, self.namespace, self.extras, self.log = name, namespace, extras, log
        self.manager, self.make_logs = manager, make_logs
        self._connecting: asyncio.Task[None] | None = None
        self.worker: str | None = None
        self.hook: AsyncJobSetOperations | None = None
        self.logs: PodLogs | None = None
        self._jobset: Mapping[str, Any] = {}

    def admitted(self, facts: Mapping[str, str]) -> None:
        """Kueue's admission: on a manager, it names the worker cluster."""
        worker = facts.get("worker")
        if not worker or worker == self.worker:
            return
        self.worker = worker
        self._connecting = asyncio.create_task(self._connect(worker), name=f"worker-{self.name}")

    async def _connect(self, worker: str) -> None:
        extras = self.extras
        if extras is None and (read := getattr(self.manager, "get_conn_extras", None)):
            try:  # in the triggerer: the manager connection's extras, read once
                extras = await read()
            except Exception as err:
                self.log.warning("Cannot read the Kubernetes connection: %s", explain(err))
        try:
            cluster = worker_cluster(extras, worker)
        except ValueError as err:
            cluster = None
            self.log.warning("%s", err)
        if cluster is None:
            self.log.info(
                "JobSet %s/%s runs on MultiKueue worker cluster %s, which no Airflow "
                "connection reaches (the Kubernetes connection's extra %r): its pods' logs "
                "are not shown here, and the result comes from output_dir.",
                self.namespace,
                self.name,
                worker,
                WORKERS_EXTRA,
            )
            return
        self.hook = cluster.async_hook()
        self.logs = self.make_logs(self.hook)
        if self.logs is not None and self._jobset:
            self.logs.update(self._jobset)

    def update(self, jobset: Mapping[str, Any]) -> None:
        """The manager's mirror changed: the worker's pods may have started or restarted."""
        self._jobset = jobset
        if self.logs is not None:
            self.logs.update(jobset)

    async def leader_message(self) -> str | None:
        """The leader's termination message on the worker, or None (no connection, or gone)."""
        if self._connecting is not None:
            await asyncio.gather(self._connecting, return_exceptions=True)
        if self.hook is None:
            return None
        try:
            pods = await self.hook.list_jobset_pods(self.name, self.namespace, leader_only=True)
        except Exception as err:
            self.log.warning("Could not read the leader's pod on %s: %s", self.worker, explain(err))
            return None
        leader = status.leader_pod(pods)
        return status.termination_message(leader) if leader else None

    async def stop(self, grace: float = 0) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
        if self.logs is not None:
            await self.logs.stop(grace=grace)
