"""Small JobSets for Kubernetes-path tests, built by the provider's own manifest builder."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators.job_spec import airflow_labels
from airflow_provider_jax.runtime.messages import failure_message, report_line, success_message
from harness.k8s_emulator import PodRun, PodScript
from harness.real_cluster.images import RUNTIME_IMAGE


def matching(objects: Iterable[dict[str, Any]], **labels: str) -> list[dict[str, Any]]:
    """The objects (JobSets, as submitted or listed) that carry every one of ``labels``."""
    return [
        o
        for o in objects
        if all(o["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())
    ]


def manifest(
    name: str = "train-0123456789",
    *,
    hosts: int = 2,
    max_restarts: int = 0,
    task_id: str = "train",
    run_id: str = "manual__1",
    try_number: int = 1,
    active_deadline_seconds: int | None = None,
    queue_name: str | None = None,
    priority_class_name: str | None = None,
) -> dict[str, Any]:
    """A ``hosts``-host (1, 2 or 8) TPU v5e JobSet for task ``task_id`` of run ``run_id``."""
    slice_type, per_host = {1: ("tpu-v5litepod-8", 8), 2: ("tpu-v5litepod-8", 4)}.get(
        hosts, ("tpu-v5litepod-32", 4)
    )
    accelerator = parse_tpu(slice_type, chips_per_host=per_host)
    assert accelerator.hosts == hosts, accelerator
    labels = airflow_labels("dag", task_id, run_id, -1, try_number)
    spec = JaxJobSpec(
        name=name,
        accelerator=accelerator,
        image=RUNTIME_IMAGE,  # what a real node holds; the emulator runs no image
        command=["python3", "-c", "pass"],
        max_restarts=max_restarts,
        active_deadline_seconds=active_deadline_seconds,
        labels=labels,
        queue_name=queue_name,
        priority_class_name=priority_class_name,
    )
    return build_jobset(spec)


def trigger_for(created: dict[str, Any], **kwargs: Any) -> Any:
    """The ``JobSetTrigger`` that waits on JobSet ``created`` (as the API server returned it)
    in the default cluster, with trigger ``kwargs``."""
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from airflow_provider_jax.triggers.jobset import JobSetTrigger

    meta = created["metadata"]
    return JobSetTrigger(
        name=meta["name"],
        namespace=meta["namespace"],
        uid=meta["uid"],
        cluster=KubernetesCluster().to_dict(),
        **kwargs,
    )


def succeed(result: Any = None, *, steps: int = 2, duration: float = 0.3):
    """A script: every host logs progress; the leader ends with ``result``."""

    def script(pod: PodRun) -> PodScript:
        logs = [f"hello from {pod.plan.tag}"]
        logs += [report_line({"step": i, "loss": 1.0 / (i + 1)}) for i in range(steps)]
        leader = pod.slice_index == pod.host_index == 0
        message = success_message(result) if leader else success_message()
        return PodScript(logs=logs, message=message, duration=duration)

    return script


def fail_host(host: int = 1, *, attempts: int = 1, result: Any = None, duration: float = 0.3):
    """A script: host ``host`` raises on the first ``attempts`` restart attempts; the others
    (and later attempts) succeed."""
    ok = succeed(result, duration=duration)

    def script(pod: PodRun) -> PodScript:
        if pod.host_index == host and pod.attempt < attempts:
            trace = (
                "Traceback (most recent call last):\n"
                '  File "train.py", line 7, in step\n'
                f"ValueError: loss is NaN at step 3 on {pod.plan.tag}\n"
            )
            return PodScript(
                exit_code=1,
                logs=["starting", "ValueError: loss is NaN"],
                message=failure_message("ValueError: loss is NaN at step 3", trace),
                duration=duration,
            )
        return ok(pod)

    return script


def disrupt_host(host: int = 1, *, attempts: int = 1, result: Any = None, duration: float = 0.3):
    """A script: host ``host`` dies by SIGKILL (exit 137, no message), as a preempted or lost
    host does, on the first ``attempts`` restart attempts; the rest succeed."""
    ok = succeed(result, duration=duration)

    def script(pod: PodRun) -> PodScript:
        if pod.host_index == host and pod.attempt < attempts:
            return PodScript(exit_code=137, logs=["starting"], duration=duration)
        return ok(pod)

    return script


def run_forever(pod: PodRun) -> PodScript:
    return PodScript(logs=[f"training on {pod.plan.tag}"], duration=float("inf"))
