"""What the real API server and JobSet webhook add to a JobSet we create, so the emulator
stores what a cluster stores. Read off kube-apiserver 1.35 with JobSet 0.11
(``tests/real_cluster/test_webhooks_and_schema.py`` lists them for every sample manifest)."""

from __future__ import annotations

import copy
from typing import Any


def defaulted_jobset(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``body`` with the server's defaults filled in where it has none."""
    jobset = copy.deepcopy(body)
    spec = jobset.setdefault("spec", {})
    if "failurePolicy" in spec:
        spec["failurePolicy"].setdefault("restartStrategy", "Recreate")
    if "network" in spec:
        spec["network"].setdefault("publishNotReadyAddresses", True)
    spec.setdefault("startupPolicy", {}).setdefault("startupPolicyOrder", "AnyOrder")
    spec.setdefault("successPolicy", {}).setdefault("operator", "All")
    for rjob in spec.get("replicatedJobs", []):
        rjob.setdefault("groupName", "default")
        pod = rjob.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            for port in container.get("ports", []):
                port.setdefault("protocol", "TCP")
        for container in pod.get("initContainers", []):
            container.setdefault("resources", {})
    return jobset
