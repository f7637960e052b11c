"""A learning-rate sweep: one trial per value, each its own JobSet on its own slice, with its
own ``output_dir`` and XCom (Airflow's dynamic task mapping); the best trial is picked
downstream.

``JaxTpuSliceOperator.partial(...).expand(entrypoint_kwargs=[...])`` maps the operator; the
decorators map the same way (``@task.jax_tpu(...)`` then ``trial.expand(learning_rate=...)``).
How many trials run at once is bounded by ``max_active_tis_per_dagrun`` here, by a pool, and
on GKE by the Kueue queue the trials share (``queue_name``).
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import dag, task

from airflow_provider_jax.operators import JaxTpuSliceOperator

LEARNING_RATES = [0.003, 0.01, 0.03, 0.1]
# Under AIRFLOW_HOME (make demo: the project's ignored .airflow/) unless the Variable
# jax_output_root names the place (gs://my-bucket/runs on GKE).
LOCAL_OUTPUTS = os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"), "jax-outputs"
)
OUTPUT_ROOT = "{{ var.value.get('jax_output_root', '" + LOCAL_OUTPUTS + "') }}"

TRIAL_DIR = (  # one per trial: the map index is part of the path
    OUTPUT_ROOT
    + "/sweep/{{ run_id | replace(':', '-') | replace('+', '-') }}/trial-{{ ti.map_index }}"
)


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def sweep() -> None:
    trials = JaxTpuSliceOperator.partial(
        task_id="trial",
        accelerator="tpu-v5litepod-4",  # one host per trial
        image="{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}",
        entrypoint="quickstart_train:train",
        output_dir=TRIAL_DIR,
        max_active_tis_per_dagrun=2,  # at most two slices at once
    ).expand(entrypoint_kwargs=[{"steps": 30, "learning_rate": lr} for lr in LEARNING_RATES])

    @task
    def pick_best(results: list[dict[str, Any]]) -> dict[str, Any]:
        # results[:] reads every trial's XCom in one request. Iterating the lazy sequence
        # instead asks for one past the last, and Airflow logs that 404 as an error.
        ranked = sorted(zip(LEARNING_RATES, results[:], strict=True), key=lambda t: t[1]["loss"])
        for lr, result in ranked:
            print(f"trial lr={lr}: loss {result['loss']:.5f}")
        lr, best = ranked[0]
        print(f"BEST TRIAL lr={lr}: loss {best['loss']:.5f} after {best['step']} steps")
        return {"learning_rate": lr, **best}

    pick_best(trials.output)


sweep()
