"""Extra links from a JAX task to its JobSet on GKE: the workload page, its pods' logs in
Cloud Logging and, when Kueue queues it, the Workload's events. They are stored in XCom when
the JobSet is submitted; elsewhere they are empty, so the UI shows no link (and logs no
error)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

CLOUD_LOGGING = "https://console.cloud.google.com/logs/query"
# The workload page xpk prints for a JobSet ("Follow your workload here"): its pods, events
# and YAML in the GKE console.
GKE_WORKLOAD = "https://console.cloud.google.com/kubernetes/service"


def gke_workload_url(
    *, project_id: str, location: str, cluster_name: str, namespace: str, name: str
) -> str:
    """The GKE console's page for JobSet ``name``."""
    path = "/".join(quote(part, safe="") for part in (location, cluster_name, namespace, name))
    return f"{GKE_WORKLOAD}/{path}/details?project={quote(project_id)}"


def cloud_logging_url(
    *, project_id: str, location: str, cluster_name: str, namespace: str, name: str
) -> str:
    """Cloud Logging, filtered to every container of JobSet ``name`` (GKE logs pod labels as
    ``k8s-pod/<label>`` with dots turned into underscores)."""
    return _logging_url(
        project_id,
        'resource.type="k8s_container"',
        *_cluster(project_id, location, cluster_name),
        f'resource.labels.namespace_name="{namespace}"',
        f'labels."k8s-pod/jobset_sigs_k8s_io/jobset-name"="{name}"',
    )


def kueue_events_url(
    *, project_id: str, location: str, cluster_name: str, namespace: str, name: str
) -> str:
    """Cloud Logging, filtered to the Kubernetes events of the Kueue Workload that queues
    JobSet ``name``: why it waits (quota, admission checks), when it was admitted or
    preempted. GKE writes the cluster's events to the ``events`` log; Kueue names a JobSet's
    Workload ``jobset-<name>-<hash>``, a hash of the JobSet's uid among others, so the filter
    is on that prefix (``:`` is a substring match)."""
    return _logging_url(
        project_id,
        'log_id("events")',
        *_cluster(project_id, location, cluster_name),
        'jsonPayload.involvedObject.kind="Workload"',
        f'jsonPayload.involvedObject.namespace="{namespace}"',
        f'jsonPayload.involvedObject.name:"jobset-{name}-"',
    )


def _cluster(project_id: str, location: str, cluster_name: str) -> tuple[str, ...]:
    return (
        f'resource.labels.project_id="{project_id}"',
        f'resource.labels.location="{location}"',
        f'resource.labels.cluster_name="{cluster_name}"',
    )


def _logging_url(project_id: str, *filters: str) -> str:
    """Cloud Logging's query page with ``filters``, one per line (lines are ANDed)."""
    query = quote("\n".join(filters), safe="")
    return f"{CLOUD_LOGGING};query={query}?project={quote(project_id)}"


class StoredLink(BaseOperatorLink):
    """A link the operator stored in XCom (under ``xcom_key``) when it submitted the JobSet;
    empty outside GKE."""

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        """Airflow asks at the end of every try. The process that ran ``execute()`` knows what
        it stored (nothing, when the task failed before a JobSet existed: reading would log
        "XCom not found"); a resumed deferred task reads what the first leg stored."""
        from airflow.sdk.execution_time.xcom import XCom

        known: dict[str, str] | None = getattr(operator, "stored_links", None)
        if known is not None:
            return known.get(self.xcom_key, "")
        return XCom.get_value(ti_key=ti_key, key=self.xcom_key) or ""


class JobSetLogsLink(StoredLink):
    """Cloud Logging, filtered to the JobSet's containers."""

    name = "JobSet logs"


class JobSetWorkloadLink(StoredLink):
    """The JobSet's page in the GKE console."""

    name = "JobSet on GKE"


class KueueEventsLink(StoredLink):
    """The events of the Kueue Workload that queues the JobSet (a task with a ``queue_name``)."""

    name = "Kueue events"
