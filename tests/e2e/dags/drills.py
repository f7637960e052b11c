"""DAGs for the fault drills on a running Airflow. What each task's pods do is up to the
emulator's kubelet (see ``tests/e2e/test_fault_drills.py``)."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxRetryPolicy, JaxTpuSliceOperator
from tests.support.dag_tasks import tpu

TIMEOUT = timedelta(seconds=20)
TRIALS = 20  # deferred at once, over two triggerers
DISRUPTION_DELAY = timedelta(seconds=3)


with DAG("drill_triggerer", schedule=None, catchup=False):
    tpu("train", deferrable=True)

with DAG("drill_timeouts", schedule=None, catchup=False):
    tpu("timeout_deferred", deferrable=True, execution_timeout=TIMEOUT)
    tpu("timeout_blocking", deferrable=False, execution_timeout=TIMEOUT)

with DAG("drill_two_triggerers", schedule=None, catchup=False, max_active_tasks=TRIALS):
    JaxTpuSliceOperator.partial(
        task_id="trial",
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        image="jax:test",
        command=["python3", "-c", "print('hello')"],
        deferrable=True,
    ).expand(env=[{"TRIAL": str(i)} for i in range(TRIALS)])

with DAG("drill_retry_policy", schedule=None, catchup=False):
    # Both have tries to spare, and no restarts in place: the provider's retry policy decides
    # which failure another try can fix.
    tpu("programming_error", deferrable=True, retries=2, max_restarts=0)
    tpu(
        "disruption",
        deferrable=True,
        retries=2,
        max_restarts=0,
        retry_policy=JaxRetryPolicy(disruption_delay=DISRUPTION_DELAY),
    )

with DAG("drill_worker_lost", schedule=None, catchup=False):
    # Waits in the worker; the test kills that try's process mid-wait, and the retry reconnects.
    tpu("train", deferrable=False, retries=1, retry_delay=timedelta(0))
