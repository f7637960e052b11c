"""The emulator's Kueue admission checks: a ProvisioningRequest per reservation, whose fate a
test decides, and what Kueue's provisioning controller makes of it (see ``kueue.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.k8s_emulator.kueue_objects import (
    PROVISIONING_REQUEST,
    WORKLOAD,
    ClusterQueue,
    Entry,
    condition,
    set_conditions,
)
from harness.k8s_emulator.store import Store, now


class ProvisioningChecks:
    """Kueue's half that talks to the cluster autoscaler; mixed into :class:`Kueue`."""

    store: Store
    entries: dict[tuple[str, str], Entry]

    if TYPE_CHECKING:  # the scheduler's half, in Kueue

        def _cluster_queue(self, entry: Entry) -> ClusterQueue | None: ...
        def _workload(self, entry: Entry) -> dict[str, Any]: ...
        def _admit(self, entry: Entry) -> None: ...
        def _evict(self, entry: Entry, reason: str, message: str, *extra: Any) -> None: ...

    # ProvisioningRequests ------------------------------------------------------------------

    def _request_capacity(self, entry: Entry, check: str) -> None:
        attempt = entry.attempts[check] = entry.attempts.get(check, 0) + 1
        self.store.create(
            PROVISIONING_REQUEST,
            {
                "apiVersion": "autoscaling.x-k8s.io/v1",
                "kind": "ProvisioningRequest",
                "metadata": {
                    "name": f"{entry.name}-{check}-{attempt}",
                    "namespace": entry.namespace,
                },
                "spec": {"provisioningClassName": "queued-provisioning.gke.io"},
                "status": {},
            },
        )

    def provision(
        self, jobset: str, outcome: str, message: str, namespace: str = "default"
    ) -> None:
        """The autoscaler's verdict on the JobSet's latest ProvisioningRequest (each check):
        ``Provisioned``, ``Failed`` or ``CapacityRevoked``."""
        entry = self.entries[(namespace, jobset)]
        cq = self._cluster_queue(entry)
        assert cq is not None
        workload = self._workload(entry)
        checks = {c["name"]: c for c in workload["status"].get("admissionChecks") or ()}
        for check in cq.checks:
            name = f"{entry.name}-{check}-{entry.attempts.get(check, 0)}"
            request = self.store.get(PROVISIONING_REQUEST, namespace, name)
            if request is not None:
                set_conditions(request, condition(outcome, True, outcome, message))
                self.store.update(PROVISIONING_REQUEST, request)
            state = checks[check]
            if outcome == "Provisioned":
                state.update(state="Ready", message=message)
            elif outcome == "Failed" and entry.attempts.get(check, 0) <= cq.retries:
                state.update(state="Retry", message=f"Retrying after failure: {message}")
            elif outcome == "Failed" or entry.admitted:
                state.update(state="Rejected", message=message)
            state["lastTransitionTime"] = now()
        self.store.update(WORKLOAD, workload)
        states = {c["state"] for c in checks.values()}
        if "Rejected" in states:
            rejected = "; ".join(
                f'"{c["name"]}" ({c["message"]})'
                for c in checks.values()
                if c["state"] == "Rejected"
            )
            self._deactivate(entry, f"AdmissionCheck in Rejected state: {rejected}")
        elif "Retry" in states:
            self._evict(entry, "AdmissionCheck", "Evicted due to AdmissionCheck in Retry state")
        elif states == {"Ready"} and not entry.admitted:
            self._admit(entry)

    def _deactivate(self, entry: Entry, why: str) -> None:
        entry.active = False
        workload = self._workload(entry)
        workload["spec"]["active"] = False
        self.store.update(WORKLOAD, workload)
        self._evict(entry, "Deactivated", f"The workload is deactivated due to {why}")
