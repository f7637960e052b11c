"""Deadlines held against the job's live ETA (``tests/operators/test_deadlines.py``): a job
reporting steps at a steady rate whose ``total_steps`` put its finish hours away."""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG, AsyncCallback, DeadlineAlert, DeadlineReference, SyncCallback
from airflow.sdk.definitions.deadline import VariableInterval

from airflow_provider_jax.operators import JaxTpuSliceOperator

CALLS = f"{os.environ['JAX_TEST_OUT']}/calls.jsonl"


def alert(reference, minutes: float | VariableInterval, callback, name: str) -> DeadlineAlert:
    interval = minutes if isinstance(minutes, VariableInterval) else None
    return DeadlineAlert(
        reference=reference,
        interval=interval or datetime.timedelta(minutes=minutes),
        callback=callback(callback_path(callback), kwargs={"path": CALLS, "alert": name}),
        name=name,
    )


def callback_path(callback) -> str:
    name = "record_async" if callback is AsyncCallback else "record"
    return f"tests.support.deadline_callbacks.{name}"


with DAG(
    "jax_deadlines",
    schedule=None,
    catchup=False,
    deadline=[  # the DAG's: a day away, and one only the scheduler can evaluate
        alert(DeadlineReference.DAGRUN_QUEUED_AT, 24 * 60, AsyncCallback, "a day"),
        alert(DeadlineReference.AVERAGE_RUNTIME(max_runs=5), 10, SyncCallback, "average"),
    ],
):
    JaxTpuSliceOperator(
        task_id="late",
        accelerator="tpu-v5litepod-4",
        backend="local",
        entrypoint="tests.support.programs:steady_steps",
        entrypoint_kwargs={"steps": 40, "step_s": 0.1},
        total_steps=100_000,  # about 3 hours at 10 steps/s
        deadline=[
            alert(DeadlineReference.DAGRUN_QUEUED_AT, 10, SyncCallback, "queued + 10m"),
            alert(DeadlineReference.DAGRUN_LOGICAL_DATE, 20, AsyncCallback, "logical + 20m"),
            # its seconds from the Variable jax_deadline_seconds, read when the try starts
            alert(
                DeadlineReference.DAGRUN_QUEUED_AT,
                VariableInterval("jax_deadline_seconds"),
                SyncCallback,
                "queued + a Variable",
            ),
        ],
    )
