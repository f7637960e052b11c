"""The JobSet API as this provider uses it: group, version, kind, and every label and
annotation key it sets or reads on JobSets, Jobs and pods. One fact in one place: the manifest
builder, the hooks, the triggers and the local backend all read these.

GKE's node labels stay with the concepts they describe (``accelerators/model.py``,
``capacity.py``, ``gpu_direct.py``).
"""

from __future__ import annotations

from airflow_provider_jax.runtime.env import DEFAULT_TERMINATION_PATH

API_VERSION = "jobset.x-k8s.io/v1alpha2"
GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"

# Set by the JobSet controller on its Jobs and pods.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
COORDINATOR_LABEL = "jobset.sigs.k8s.io/coordinator"  # from spec.coordinator (Pathways)
EXCLUSIVE_TOPOLOGY_ANNOTATION = "alpha.jobset.sigs.k8s.io/exclusive-topology"
# Set by the Job controller on an Indexed Job's pods.
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Kueue: the queue a JobSet asks for; the job uid it labels each Workload with.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"

# Ours: every JobSet this provider makes carries MANAGED_BY_LABEL (the shared watch selects on
# it) and Airflow's identity (operators/job_spec.py, airflow_labels).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "airflow-provider-jax"
IDENTITY_LABELS = ("dag_id", "task_id", "run_id", "map_index")
TRY_NUMBER_LABEL = "try_number"
# Set on a JobSet just before a try defers on it: that try's trigger now owns its deletion.
DEFERRED_BY_TRY_ANNOTATION = "jax.airflow.apache.org/deferred-by-try"

CONTAINER_NAME = "jax"
TERMINATION_MESSAGE_PATH = DEFAULT_TERMINATION_PATH
