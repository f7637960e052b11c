"""A DAG for the user-action drill on a running Airflow whose ``kubernetes_default`` is the real
cluster. Every task holds its slice until the test opens its gate (a file in the folder
``JAX_TEST_GATES``, shared with the pods); two TPU slices and one GPU job fit the real nodes at
once."""

from __future__ import annotations

import os

from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from tests.support.real_cluster_pods import RUNTIME_IMAGE, shared_folder

GATES = os.environ.get("JAX_TEST_GATES", "/nonexistent")
# JAX's preemption service owns SIGTERM once jax.distributed runs, so a deleted pod lives to
# the end of its grace period: 5 s here (30 s is Kubernetes' default).
GRACE_S = 5
HOLD = {
    "image": RUNTIME_IMAGE,
    **shared_folder(GATES),
    "entrypoint": "gated_train:hold_until",
    "backend": "kubernetes",
    "termination_grace_period": GRACE_S,
}

with DAG("real_user_actions", schedule=None, catchup=False):
    for task_id, deferrable in (("failed_deferred", True), ("failed_blocking", False)):
        JaxTpuSliceOperator(
            task_id=task_id, accelerator="tpu-v5litepod-8", deferrable=deferrable,
            entrypoint_kwargs={"gate": f"{GATES}/{task_id}"}, **HOLD,
        )  # fmt: skip
    JaxGpuJobOperator(
        task_id="cleared", accelerator="h100", gpus_per_node=8, num_nodes=2,
        gpu_networking="none", deferrable=True, retries=0,
        entrypoint_kwargs={"gate": f"{GATES}/cleared"}, **HOLD,
    )  # fmt: skip

with DAG("real_orphans", schedule=None, catchup=False):
    # Both defer; "abandoned" is marked failed while no triggerer runs its trigger.
    for task_id in ("abandoned", "kept"):
        JaxTpuSliceOperator(
            task_id=task_id, accelerator="tpu-v5litepod-8", deferrable=True, retries=0,
            entrypoint_kwargs={"gate": f"{GATES}/{task_id}"}, **HOLD,
        )  # fmt: skip
