"""DAGs that the Kubernetes end-to-end tests run with ``airflow dags test`` against the API
emulator. What each task's pods do is up to the emulator's kubelet (see the tests)."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_jax import Data
from airflow_provider_jax.manifest.secret_refs import SecretRef
from tests.support.dag_tasks import tpu


@task
def record(value: Any, name: str) -> Any:
    """Hand the upstream value to the test: a downstream task really received it."""
    Path(os.environ["JAX_TEST_OUT"], f"{name}.json").write_text(json.dumps(value))
    return value


def use(upstream: Any, name: str) -> Any:
    return record.override(task_id=f"use_{name}")(upstream, name)


with DAG("jax_k8s_e2e", schedule=None, catchup=False):
    deferred = tpu("deferred", deferrable=True)
    use(deferred.output, "deferred")
    use(tpu("blocking", deferrable=False).output, "blocking")
    outputs = tpu("outputs", deferrable=True, multiple_outputs=True)
    use(outputs.output["loss"], "outputs_loss")
    tpu("fails", deferrable=True)
    tpu("retried", deferrable=True, retries=1, retry_delay=timedelta(0))
    # After a task that ran the backend: the first task of `dags test` spends seconds
    # importing the Kubernetes clients (more with no bytecode cache, on two busy cores),
    # which a 4 s execution_timeout would count, timing out before any JobSet is made.
    # A local Data folder: uploaded to output_dir's bucket (the GCS emulator) before the JobSet.
    tpu(
        "data",
        deferrable=True,
        command=None,
        entrypoint="train:main",
        entrypoint_kwargs={"dataset": Data(str(Path(__file__).parent / "dataset"))},
        output_dir=f"gs://{os.environ.get('JAX_TEST_BUCKET', 'bucket')}/runs/{{{{ ds_nodash }}}}",
    )
    deferred >> [
        tpu("timeout_deferred", deferrable=True, execution_timeout=timedelta(seconds=4)),
        tpu("timeout_blocking", deferrable=False, execution_timeout=timedelta(seconds=4)),
    ]

with DAG("jax_k8s_one", schedule=None, catchup=False) as one:
    use(tpu("train", deferrable=os.environ.get("JAX_TEST_DEFERRABLE") != "0").output, "train")

with DAG("jax_k8s_pair", schedule=None, catchup=False):
    use(tpu("deferred", deferrable=True).output, "deferred")
    use(tpu("blocking", deferrable=False).output, "blocking")

with DAG("jax_k8s_rendered", schedule=None, catchup=False):
    # What the Rendered Templates view shows: a secret by reference, a templated env value,
    # and a decorated function that asks for ``ds`` (a context value that is part of its call).
    tpu(
        "plain",
        env={"RUN_DAY": "{{ ds }}"},
        secrets=[SecretRef("env", "WANDB_API_KEY", "wandb", "api-key")],
    )

    @task.jax_tpu(accelerator="tpu-v5litepod-8", image="jax:test")
    def decorated(steps: int, ds: str | None = None) -> dict[str, Any]:
        return {"steps": steps, "ds": ds}

    decorated(5)

if __name__ == "__main__":
    # ``airflow dags test`` names its run after the current time; a fixed run_after gives a
    # fixed run_id, so running this again is the same task instance, as a retry would be.
    fixed = datetime(2024, 1, 1, tzinfo=UTC)
    {"jax_k8s_one": one}[sys.argv[1]].test(logical_date=fixed, run_after=fixed)
