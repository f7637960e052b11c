"""Extra link from a JAX task to its JobSet's pod logs in Cloud Logging."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

CLOUD_LOGGING = "https://console.cloud.google.com/logs/query"


def cloud_logging_url(
    *, project_id: str, location: str, cluster_name: str, namespace: str, name: str
) -> str:
    """Cloud Logging, filtered to every container of JobSet ``name`` (GKE logs pod labels as
    ``k8s-pod/<label>`` with dots turned into underscores)."""
    query = "\n".join(
        [
            'resource.type="k8s_container"',
            f'resource.labels.project_id="{project_id}"',
            f'resource.labels.location="{location}"',
            f'resource.labels.cluster_name="{cluster_name}"',
            f'resource.labels.namespace_name="{namespace}"',
            f'labels."k8s-pod/jobset_sigs_k8s_io/jobset-name"="{name}"',
        ]
    )
    return f"{CLOUD_LOGGING};query={quote(query, safe='')}?project={quote(project_id)}"


class JobSetLogsLink(BaseOperatorLink):
    """The link the operator stored in XCom (under ``xcom_key``) when it submitted the
    JobSet; empty outside GKE."""

    name = "JobSet logs"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        return XCom.get_value(ti_key=ti_key, key=self.xcom_key) or ""
