"""Driving jobs on the real cluster from a test: each job through the Kubernetes backend in a
thread (as a worker waits), its trigger logging to a logger of the test's own."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.contract import Outcome
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from airflow_provider_jax.operators.job_settings import TryState, job_settings
from tests.support.real_cluster_pods import RUNTIME_IMAGE, shared_folder


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := [line for line in self.lines if text in line]:
                return found[-1]
            time.sleep(0.1)
        raise AssertionError(
            f"no log line with {text!r} in {timeout}s; got:\n" + "\n".join(self.lines[-30:])
        )


def task_context(task_id: str, try_number: int = 1) -> dict[str, Any]:
    """What an operator's ``build_manifest`` reads of its task instance."""
    ti = SimpleNamespace(dag_id="real_cluster", task_id=task_id, run_id="test", map_index=-1,
                         try_number=try_number, start_date=datetime.now(UTC))  # fmt: skip
    return {"ti": ti}


def run(
    name: str,
    log: logging.Logger,
    *,
    on_finish_action: str = "delete_jobset",
    deadline: float | None = None,
    wait: bool = True,
    shared: Path | None = None,
    operator: type[JaxTpuSliceOperator | JaxGpuJobOperator] = JaxTpuSliceOperator,
    **op_kwargs: Any,
):
    """Start a TPU job (2 hosts unless ``accelerator`` says otherwise) on the real nodes and
    wait for it in a thread: (thread, {"value": outcome}). Its manifest is rendered as a
    task's (the connection's extras apply: the agent image); ``shared``: a folder of the
    test's that every pod sees at its own path; ``operator``: JaxGpuJobOperator for a GPU
    job (``accelerator`` and its node count in ``op_kwargs``).
    Without ``wait``, only start it, as a worker that then dies would. Started twice for one
    task, the second start is the retried worker's: it reattaches."""
    op = operator(
        task_id=name, image=RUNTIME_IMAGE, backend="kubernetes",
        on_finish_action=on_finish_action,
        # JAX outlives SIGTERM, so a deleted or restarted slice waits out its grace period.
        **{"accelerator": "tpu-v5litepod-8", "termination_grace_period": 5,
           **(shared_folder(shared) if shared is not None else {}), **op_kwargs},
    )  # fmt: skip
    context = task_context(name)
    manifest = op.build_manifest(context)
    # The try's settings as the operator makes them (queue_timeout, output_dir, ...), logging
    # to the test's logger, with the test's deadline.
    state = TryState(name=op.jobset_name_for(context), slices=op.arguments.num_slices)
    settings = job_settings(op.arguments, op.plan, state, context,
                            execution_timeout=op.execution_timeout, dag=None, log=log)  # fmt: skip
    settings = dataclasses.replace(settings, deadline=deadline)
    backend = KubernetesBackend(settings)
    started = backend.start(manifest)
    # Each wait's trigger logs to the test's logger for that job (one triggerer, many tasks).
    started.handle._log = log
    outcome: dict[str, Outcome | BaseException] = {}

    def waiting() -> None:
        try:
            outcome["value"] = backend.wait(started)
        except BaseException as err:
            outcome["value"] = err

    thread = threading.Thread(target=waiting, daemon=True)
    if wait:
        thread.start()
    return thread, outcome


def gated(name: str, gate: Path, log: logging.Logger, priority: str = "low", **kwargs: Any):
    """A queued job that holds its slice until ``gate`` exists."""
    return run(
        name, log, entrypoint="gated_train:hold_until", entrypoint_kwargs={"gate": str(gate)},
        queue_name="tpu-queue", labels={"kueue.x-k8s.io/priority-class": priority},
        shared=gate.parent, **kwargs,
    )  # fmt: skip


def logger(name: str) -> tuple[logging.Logger, Lines]:
    log = logging.getLogger(f"real-cluster.{name}")
    log.setLevel(logging.INFO)
    lines = Lines()
    log.addHandler(lines)
    return log, lines
