"""The quickstart's training task on a GKE cluster named by project, location and name, queued
by Kueue: for the running-Airflow test of the extra links a GKE task gets (the cluster is
``tests/support/gke.py``'s, found through Google's GKE API)."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator

with DAG(
    dag_id="gke_quickstart",
    schedule=None,
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
):
    JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",
        image="us-docker.pkg.dev/ml-platform/training/quickstart:latest",
        entrypoint="quickstart_train:train",
        cluster_name="tpu-v5e",  # tests/support/gke.py: CLUSTER, LOCATION, PROJECT
        location="us-central2",
        project_id="ml-platform",
        queue_name="team-a",
    )
