"""Driving jobs on the real control plane from a test: each job through the Kubernetes backend
in a thread (as a worker waits), its trigger logging to a logger of the test's own."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.contract import JobSettings, Outcome
from airflow_provider_jax.operators import JaxTpuSliceOperator


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


def run(
    name: str,
    log: logging.Logger,
    *,
    on_finish_action: str = "delete_jobset",
    deadline: float | None = None,
    wait: bool = True,
    **op_kwargs: Any,
):
    """Start a TPU job (2 hosts unless ``accelerator`` says otherwise) and wait for it in a
    thread: (thread, {"value": outcome}).
    Without ``wait``, only start it, as a worker that then dies would. Started twice for one
    task, the second start is the retried worker's: it reattaches."""
    op = JaxTpuSliceOperator(
        task_id=name, image="img:1", backend="kubernetes",
        # JAX outlives SIGTERM, so a deleted or restarted slice waits out its grace period.
        **{"accelerator": "tpu-v5litepod-8", "termination_grace_period": 5, **op_kwargs},
    )  # fmt: skip
    manifest = op.dry_run()
    backend = KubernetesBackend(
        JobSettings(
            name=manifest["metadata"]["name"],
            namespace="default",
            log=log,
            on_finish_action=on_finish_action,
            deadline=deadline,
        )
    )
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
        queue_name="tpu-queue", labels={"kueue.x-k8s.io/priority-class": priority}, **kwargs,
    )  # fmt: skip


def logger(name: str) -> tuple[logging.Logger, Lines]:
    log = logging.getLogger(f"real-cluster.{name}")
    log.setLevel(logging.INFO)
    lines = Lines()
    log.addHandler(lines)
    return log, lines
