"""The JobSet API as this provider uses it: group, version, kind, and the labels and
annotations the JobSet and Job controllers set (and the node labels JobSet's exclusive
placement keys on). One fact in one place: the manifest builder, the hooks, the triggers and
the local backend all read these.

GKE's node labels stay with the concepts they describe (``accelerators/model.py``,
``capacity.py``, ``gpu_direct.py``); Kueue's keys are in ``kueue_keys.py``, ours in
``provider_keys.py``.
"""

API_VERSION = "jobset.x-k8s.io/v1alpha2"
GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"

# Set by the JobSet controller on its Jobs and pods.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
# InPlaceRestart (v0.12): the attempt a pod's agent has reached, and the kubelet's reason for
# the containers it stopped so that all of the pod's containers restart.
IN_PLACE_ATTEMPT_ANNOTATION = "jobset.sigs.k8s.io/in-place-restart-attempt"
RESTARTING_ALL_CONTAINERS = "RestartingAllContainers"
REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
COORDINATOR_LABEL = "jobset.sigs.k8s.io/coordinator"  # from spec.coordinator (Pathways)
EXCLUSIVE_TOPOLOGY_ANNOTATION = "alpha.jobset.sigs.k8s.io/exclusive-topology"
# Set by the Job controller on an Indexed Job's pods.
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
HOSTNAME_LABEL = "kubernetes.io/hostname"
