"""The objects the emulated controllers write: a JobSet's pods, and its status conditions,
shaped as the real JobSet and Job controllers shape them."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.backends.local.pods import PodPlan
from airflow_provider_jax.manifest.jobset_api import COMPLETION_INDEX_ANNOTATION
from harness.k8s_emulator.kubelet import PodRun
from harness.k8s_emulator.store import now


def pod_object(
    pod: PodRun, plan: PodPlan, job_name: str, pod_spec: dict[str, Any], pod_index_label: bool
) -> dict[str, Any]:
    """The Pod the Job controller makes for one (slice, host) of an attempt."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "labels": {
                **plan.labels,
                **({COMPLETION_INDEX_ANNOTATION: str(plan.host_index)} if pod_index_label else {}),
                "batch.kubernetes.io/job-name": job_name,
            },
            "annotations": dict(plan.annotations),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name}],
        },
        "spec": {
            "hostname": plan.name,
            "subdomain": pod.jobset,
            "restartPolicy": "Never",
            "nodeSelector": pod_spec.get("nodeSelector") or {},
            "containers": [pod.container],
        },
        "status": {"phase": "Pending"},
    }


def fail_message(job: str) -> str:
    """JobSet's condition message when a FailJobSet rule fires."""
    return f"applying FailJobSet failure policy action (first failed job: {job})"


def set_condition(status: dict[str, Any], kind: str, reason: str, message: str) -> None:
    status["conditions"] = [
        *[c for c in status.get("conditions", []) if c["type"] != kind],
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now(),
        },
    ]
