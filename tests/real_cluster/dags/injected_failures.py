"""Failures injected between a JobSet's create and the task's wait or deferral
(``test_injected_failures.py``): each task fails at one step, and must leave nothing behind.
The steps are the backend's (building the trigger, claiming the JobSet for this try, the
console links) and the operator's (announcing the links, deferring)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG

from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.real_cluster_pods import RUNTIME_IMAGE as IMAGE

STEPS = ("backend_started", "announce", "defer")


class Injected(RuntimeError):
    """The injected failure: its message names the step."""


class FailingAt(JaxTpuSliceOperator):
    """The operator as it is, but for one step that raises."""

    def __init__(self, *, step: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step = step

    def _backend(self, context: Any) -> Any:
        backend = super()._backend(context)
        if self.step == "backend_started" and isinstance(backend, KubernetesBackend):

            def failing_links(*args: Any, **kwargs: Any) -> Any:
                raise Injected("injected at backend_started")

            backend._links = failing_links  # type: ignore[method-assign]
        return backend

    def _publisher(self) -> Any:
        publisher = super()._publisher()
        if self.step == "announce":

            def failing_announce(*args: Any, **kwargs: Any) -> None:
                raise Injected("injected at announce")

            publisher.announce = failing_announce
        return publisher

    def defer(self, **kwargs: Any) -> Any:
        if self.step == "defer":
            raise Injected("injected at defer")
        return super().defer(**kwargs)


with DAG("jax_injected_failures", schedule=None, catchup=False):
    for step in STEPS:
        FailingAt(
            task_id=f"fail_at_{step}",
            step=step,
            accelerator="tpu-v5litepod-8",
            image=IMAGE,
            entrypoint="gated_train:hold_until",
            entrypoint_kwargs={"gate": "/nonexistent/never"},
            backend="kubernetes",
            deferrable=True,
            termination_grace_period=5,
            retries=0,
        )
