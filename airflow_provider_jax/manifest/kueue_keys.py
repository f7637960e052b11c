"""Kueue's keys on the objects this provider makes and reads: the queue a JobSet asks for,
the job uid Kueue labels each Workload with, and the pod-set annotations of its Topology Aware
Scheduling (``podset-*``), which placement and dynamic slicing write."""

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
