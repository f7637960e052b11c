"""Kueue's keys on the objects this provider makes and reads: the queue a JobSet asks for,
and the job uid Kueue labels each Workload with."""

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
