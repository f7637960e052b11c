"""The keys and names this provider itself sets on JobSets and pods.

Every JobSet it makes carries MANAGED_BY_LABEL (the shared watch selects on it) and Airflow's
identity (``operators/job_spec.py``, ``airflow_labels``).
"""

from __future__ import annotations

from airflow_provider_jax.runtime.env import DEFAULT_TERMINATION_PATH

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "airflow-provider-jax"
IDENTITY_LABELS = ("dag_id", "task_id", "run_id", "map_index")
TRY_NUMBER_LABEL = "try_number"
# Set on a JobSet just before a try defers on it: that try's trigger now owns its deletion.
DEFERRED_BY_TRY_ANNOTATION = "jax.airflow.apache.org/deferred-by-try"

CONTAINER_NAME = "jax"
TERMINATION_MESSAGE_PATH = DEFAULT_TERMINATION_PATH
