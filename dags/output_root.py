"""Where the example DAGs write when no ``jax_output_root`` Variable points elsewhere (say
``gs://my-bucket/runs`` on GKE): under ``AIRFLOW_HOME``, which ``make demo`` keeps in the
project's ignored ``.airflow/``, never the machine's temp folder."""

from __future__ import annotations

import os

LOCAL_OUTPUT_ROOT = os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"), "jax-outputs"
)
OUTPUT_ROOT = "{{ var.value.get('jax_output_root', '" + LOCAL_OUTPUT_ROOT + "') }}"
# The continuous-training pair shares one fixed folder (an Asset's URI is fixed at parse).
CONTINUOUS_DIR = os.environ.get(
    "JAX_CONTINUOUS_DIR", os.path.join(LOCAL_OUTPUT_ROOT, "train_continuous")
)
