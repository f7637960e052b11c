"""Kueue, as far as a queued JobSet's client can observe it.

Each JobSet labelled ``kueue.x-k8s.io/queue-name`` (created suspended) gets a ``Workload``
named ``jobset-<name>-<hash>``, owned by the JobSet and labelled with its uid
(``kueue.x-k8s.io/job-uid``), as Kueue's job framework makes it. Pending Workloads are
considered in priority then creation order (BestEffortFIFO) against their ClusterQueue's
nominal quota of one flavor:

- one that fits reserves quota (``QuotaReserved``); with no admission checks it is
  ``Admitted`` and its JobSet unsuspended;
- one that does not stays ``QuotaReserved=False`` with the flavor assigner's message
  ("couldn't assign flavors to pod set ...: insufficient unused quota for ... N more needed"),
  unless evicting lower-priority admitted Workloads of its ClusterQueue would make room:
  those are evicted (``Evicted``/``Preempted``, "Preempted to accommodate a workload ..."),
  their JobSets suspended (pods stopped), their quota released and they are requeued;
- a ClusterQueue with a ProvisioningRequest admission check creates
  ``<workload>-<check>-<attempt>`` per reservation; the test decides each request's fate
  (:meth:`Kueue.provision`): ``Provisioned`` makes the check Ready and admits; ``Failed``
  retries (check ``Retry``, an eviction, a new request) until ``retries`` are spent, then the
  check is ``Rejected`` and the Workload deactivated (``spec.active=false``);
  ``CapacityRevoked`` on an admitted Workload rejects and deactivates it too.

The facts come from Kueue's source (pkg/scheduler/flavorassigner, pkg/scheduler/preemption,
pkg/controller/admissionchecks/provisioning/controller.go, apis/kueue/v1beta2) and the visibility
API (apis/visibility/v1beta1: positions count from 0).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import Callable
from typing import Any

from harness.k8s_emulator.kueue_objects import (
    JOB_UID_LABEL,
    QUEUE_LABEL,
    WORKLOAD,
    ClusterQueue,
    Entry,
    LocalQueue,
    condition,
    request_of,
    set_conditions,
)
from harness.k8s_emulator.kueue_provisioning import ProvisioningChecks
from harness.k8s_emulator.store import Store, now

SERVED_VERSIONS: tuple[str, ...] = ("v1beta2", "v1beta1")  # Kueue 0.15+; a test may narrow it


class Kueue(ProvisioningChecks):
    """Installed once :meth:`configure` gives it queues; until then JobSets get no Workload."""

    def __init__(
        self,
        store: Store,
        suspend: Callable[[str, str], Any],
        resume: Callable[[str, str], None],
    ) -> None:
        self.store, self._suspend, self._resume = store, suspend, resume
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.local_queues: dict[tuple[str, str], LocalQueue] = {}
        self.priorities: dict[str, int] = {}  # PriorityClass -> value
        self.versions = SERVED_VERSIONS  # the Workload versions served
        self.entries: dict[tuple[str, str], Entry] = {}  # (namespace, JobSet) -> its Workload
        self._seq = itertools.count()
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def installed(self) -> bool:
        return bool(self.cluster_queues)

    def configure(
        self, *queues: ClusterQueue | LocalQueue, priorities: dict[str, int] | None = None
    ) -> None:
        for queue in queues:
            if isinstance(queue, ClusterQueue):
                self.cluster_queues[queue.name] = queue
            else:
                self.local_queues[(queue.namespace, queue.name)] = queue
        self.priorities.update(priorities or {})
        self.schedule()

    def reset(self) -> None:
        self.cluster_queues.clear()
        self.local_queues.clear()
        self.priorities.clear()
        self.entries.clear()
        self.versions = SERVED_VERSIONS

    # the job framework -------------------------------------------------------------------------

    def jobset_created(self, jobset: dict[str, Any]) -> None:
        meta = jobset["metadata"]
        queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
        if not self.installed or not queue:
            return
        podset, request = request_of(jobset)
        pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        digest = hashlib.sha256(f"{meta['name']}/{meta['uid']}".encode()).hexdigest()[:5]
        entry = Entry(
            meta["namespace"],
            f"jobset-{meta['name']}-{digest}",
            meta["name"],
            queue,
            self.priorities.get(pod_spec.get("priorityClassName") or "", 0),
            next(self._seq),
            request,
            podset,
        )
        self.entries[(entry.namespace, entry.jobset)] = entry
        pod_sets = [
            {"name": r["name"], "count": r.get("replicas", 1)}
            for r in jobset["spec"]["replicatedJobs"]
        ]
        self.store.create(
            WORKLOAD,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {
                    "name": entry.name,
                    "namespace": entry.namespace,
                    "labels": {JOB_UID_LABEL: meta["uid"]},
                    "ownerReferences": [
                        {
                            "apiVersion": jobset["apiVersion"],
                            "kind": "JobSet",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "queueName": queue,
                    "priority": entry.priority,
                    "active": True,
                    "podSets": pod_sets,
                },
                "status": {},
            },
        )
        self.schedule()

    def jobset_gone(self, namespace: str, name: str, finished: str | None) -> None:
        """The JobSet finished (its Workload is ``Finished``) or was deleted (with it)."""
        entry = self.entries.pop((namespace, name), None)
        if entry is None:
            return
        if finished is None:
            self.store.remove(WORKLOAD, namespace, entry.name)
        else:
            self._write(entry, condition("Finished", True, finished, f"JobSet {finished}"))
        self.schedule()

    # the scheduler -------------------------------------------------------------------------

    def _cluster_queue(self, entry: Entry) -> ClusterQueue | None:
        return self.cluster_queues.get(self._cq_name(entry) or "")

    def _pending(self, cq: str) -> list[Entry]:
        return sorted(
            (
                e
                for e in self.entries.values()
                if e.active and not e.reserved and self._cq_name(e) == cq
            ),
            key=lambda e: (-e.priority, e.seq),
        )

    def _cq_name(self, entry: Entry) -> str | None:
        local = self.local_queues.get((entry.namespace, entry.queue))
        return local.cluster_queue if local else None

    def _free(self, cq: ClusterQueue) -> dict[str, int]:
        free = dict(cq.quota)
        for e in self.entries.values():
            if e.reserved and self._cq_name(e) == cq.name:
                for resource in free:
                    free[resource] -= e.request.get(resource, 0)
        return free

    def schedule(self) -> None:
        """One pass over the pending Workloads, highest priority first (BestEffortFIFO)."""
        for entry in [e for e in self.entries.values() if e.active and not e.reserved]:
            if self._cluster_queue(entry) is None:
                why = f"LocalQueue {entry.queue} doesn't exist"
                self._pend(entry, "Inadmissible", why)
        for cq in self.cluster_queues.values():
            free = self._free(cq)
            holders = [
                e for e in self.entries.values() if e.reserved and self._cq_name(e) == cq.name
            ]
            for entry in self._pending(cq.name):
                short = self._shortfall(cq, entry, free)
                if short is None:
                    self._reserve(cq, entry)
                    holders.append(entry)
                    for resource in free:
                        free[resource] -= entry.request.get(resource, 0)
                    continue
                if cq.preemption and any(h.priority < entry.priority for h in holders):
                    for victim in self._victims(cq, entry, holders):
                        self._evict_preempted(victim, entry)
                if any(h.evicting for h in holders):
                    short = "Pending the preemption of lower-priority workload(s)"
                self._pend(entry, "Pending", short)

    def _pend(self, entry: Entry, reason: str, message: str) -> None:
        """Say why it waits, writing only when that changed (a thousand waiting, each pass)."""
        if entry.said != (reason, message):
            entry.said = (reason, message)
            self._write(entry, condition("QuotaReserved", False, reason, message))

    def _shortfall(self, cq: ClusterQueue, entry: Entry, free: dict[str, int]) -> str | None:
        """The flavor assigner's message when ``entry`` does not fit, else None."""
        prefix = f"couldn't assign flavors to pod set {entry.podset}: "
        for resource, nominal in cq.quota.items():
            want = entry.request.get(resource, 0)
            if want > nominal:
                return prefix + (
                    f"insufficient quota for {resource} in flavor {cq.flavor}, previously "
                    f"considered podsets requests (0) + current podset request ({want}) > "
                    f"maximum capacity ({nominal})"
                )
            if want > free[resource]:
                return prefix + (
                    f"insufficient unused quota for {resource} in flavor {cq.flavor}, "
                    f"{want - free[resource]} more needed"
                )
        return None

    def _victims(self, cq: ClusterQueue, entry: Entry, holders: list[Entry]) -> list[Entry]:
        """Lower-priority admitted Workloads whose eviction makes room, lowest first."""
        free = self._free(cq)
        chosen: list[Entry] = []
        candidates = sorted(
            (e for e in holders if not e.evicting and e.priority < entry.priority),
            key=lambda e: (e.priority, -e.seq),
        )
        for victim in candidates:
            if self._shortfall(cq, entry, free) is None:
                break
            chosen.append(victim)
            for resource in free:
                free[resource] += victim.request.get(resource, 0)
        return chosen if self._shortfall(cq, entry, free) is None else []

    def _reserve(self, cq: ClusterQueue, entry: Entry) -> None:
        entry.reserved, entry.said = True, None
        assignment = {
            "name": entry.podset,
            "flavors": {r: cq.flavor for r in cq.quota if r != "pods"},
            "resourceUsage": {r: str(entry.request.get(r, 0)) for r in cq.quota},
        }
        workload = self._workload(entry)
        workload["status"]["admission"] = {
            "clusterQueue": cq.name,
            "podSetAssignments": [assignment],
        }
        reserved = condition(
            "QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq.name}"
        )
        set_conditions(workload, reserved, condition("Evicted", False, "QuotaReserved", ""))
        if cq.checks:
            workload["status"]["admissionChecks"] = [
                {"name": c, "state": "Pending", "message": "", "lastTransitionTime": now()}
                for c in cq.checks
            ]
            self.store.update(WORKLOAD, workload)
            for check in cq.checks:
                self._request_capacity(entry, check)
            return
        self.store.update(WORKLOAD, workload)
        self._admit(entry)

    def _admit(self, entry: Entry) -> None:
        entry.admitted = True
        self._write(entry, condition("Admitted", True, "Admitted", "The workload is admitted"))
        self._resume(entry.namespace, entry.jobset)

    def _evict(self, entry: Entry, reason: str, message: str, *extra: dict[str, Any]) -> None:
        """Evict: the JobSet is suspended (its pods stop), then the quota is released."""
        was_admitted, entry.admitted = entry.admitted, False
        entry.evicting = True
        workload = self._workload(entry)
        stats = workload["status"].setdefault("schedulingStats", {}).setdefault("evictions", [])
        cause = next((c["reason"] for c in extra if c["type"] == "Preempted"), "")
        counted = next(
            (s for s in stats if (s["reason"], s["underlyingCause"]) == (reason, cause)), None
        )
        if counted is None:
            stats.append({"reason": reason, "underlyingCause": cause, "count": 1})
        else:
            counted["count"] += 1
        set_conditions(
            workload,
            condition("Evicted", True, reason, message),
            condition("Admitted", False, "NoReservation", "The workload has no reservation"),
            *extra,
        )
        self.store.update(WORKLOAD, workload)

        async def release() -> None:
            if was_admitted:
                await self._suspend(entry.namespace, entry.jobset)
            entry.reserved = entry.evicting = False
            if (entry.namespace, entry.jobset) in self.entries:
                pending = condition("QuotaReserved", False, "Pending", message)
                entry.said = ("Pending", message)
                requeued = condition("Requeued", entry.active, reason, message)
                self._write(entry, pending, requeued)
            self.schedule()

        task = asyncio.ensure_future(release())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _evict_preempted(self, victim: Entry, preemptor: Entry) -> None:
        message = (
            f"Preempted to accommodate a workload (UID: {preemptor.name}, JobUID: "
            f"{preemptor.jobset}) due to prioritization in the ClusterQueue"
        )
        preempted = condition("Preempted", True, "InClusterQueue", message)
        self._evict(victim, "Preempted", message, preempted)

    # the visibility API --------------------------------------------------------------------

    def pending_workloads(self, namespace: str, queue: str) -> list[dict[str, Any]] | None:
        local = self.local_queues.get((namespace, queue))
        if local is None:
            return None
        in_cq = self._pending(local.cluster_queue)
        in_lq = [e for e in in_cq if (e.namespace, e.queue) == (namespace, queue)]
        return [
            {
                "metadata": {"name": e.name, "namespace": e.namespace},
                "priority": e.priority,
                "localQueueName": e.queue,
                "positionInClusterQueue": in_cq.index(e),
                "positionInLocalQueue": i,
            }
            for i, e in enumerate(in_lq)
        ]

    # storage -------------------------------------------------------------------------------

    def _workload(self, entry: Entry) -> dict[str, Any]:
        workload = self.store.get(WORKLOAD, entry.namespace, entry.name)
        assert workload is not None, entry
        workload.setdefault("status", {})
        return workload

    def _write(self, entry: Entry, *conditions: dict[str, Any]) -> None:
        workload = self.store.get(WORKLOAD, entry.namespace, entry.name)
        if workload is None:
            return
        have = {c["type"]: c for c in (workload.get("status") or {}).get("conditions") or ()}
        fields = ("status", "reason", "message")
        if all(
            c["type"] in have and all(have[c["type"]].get(k) == c[k] for k in fields)
            for c in conditions
        ):
            return  # nothing new: a real controller's no-op patch writes nothing
        set_conditions(workload, *conditions)
        self.store.update(WORKLOAD, workload)
