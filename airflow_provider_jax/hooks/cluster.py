"""Which cluster a JobSet lives on, as plain data a trigger can carry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations, JobSetOperations


@dataclass(frozen=True)
class KubernetesCluster:
    """Which cluster, as plain data a trigger can carry: a Kubernetes connection, or a GKE
    cluster's endpoint with the Google connection that mints a fresh token for every call
    (no token that expires in the triggerer after an hour, Airflow issue #31648)."""

    conn_id: str | None = "kubernetes_default"
    cluster_context: str | None = None
    in_cluster: bool | None = None
    cluster_url: str | None = None
    ssl_ca_cert: str | None = None
    gcp_conn_id: str = "google_cloud_default"
    impersonation_chain: str | tuple[str, ...] | None = None
    use_dns_endpoint: bool = False

    @property
    def is_gke(self) -> bool:
        return self.cluster_url is not None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if isinstance(self.impersonation_chain, tuple):
            data["impersonation_chain"] = list(self.impersonation_chain)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KubernetesCluster:
        chain = data.get("impersonation_chain")
        return cls(
            **{**data, "impersonation_chain": tuple(chain) if isinstance(chain, list) else chain}
        )

    def hook(self) -> JobSetOperations:
        if self.is_gke:
            from airflow_provider_jax.hooks.gke import GKEJobSetHook

            return GKEJobSetHook(**self._gke_kwargs())
        from airflow_provider_jax.hooks.jobset import JobSetHook

        return JobSetHook(
            conn_id=self.conn_id, cluster_context=self.cluster_context, in_cluster=self.in_cluster
        )

    def connection_extras(self) -> dict[str, Any] | None:
        """The Kubernetes connection's extras; None for a GKE cluster named by its project."""
        if self.is_gke:
            return None
        from airflow_provider_jax.hooks.jobset import JobSetHook

        hook = JobSetHook(
            conn_id=self.conn_id, cluster_context=self.cluster_context, in_cluster=self.in_cluster
        )
        return dict(hook.conn_extras)

    def async_hook(self, connection_extras: dict[str, Any] | None = None) -> AsyncJobSetOperations:
        """``connection_extras`` lets a worker that already read the connection skip a lookup."""
        if self.is_gke:
            from airflow_provider_jax.hooks.gke import GKEAsyncJobSetHook

            return GKEAsyncJobSetHook(**self._gke_kwargs())
        from airflow_provider_jax.hooks.jobset import AsyncJobSetHook

        return AsyncJobSetHook(
            conn_id=self.conn_id,
            cluster_context=self.cluster_context,
            in_cluster=self.in_cluster,
            connection_extras=connection_extras,
        )

    def _gke_kwargs(self) -> dict[str, Any]:
        return {
            "cluster_url": self.cluster_url,
            "ssl_ca_cert": self.ssl_ca_cert,
            "gcp_conn_id": self.gcp_conn_id,
            "impersonation_chain": self.impersonation_chain,
            "use_dns_endpoint": self.use_dns_endpoint,
        }


def cluster_from(
    *,
    kubernetes_conn_id: str | None,
    cluster_name: str | None = None,
    project_id: str | None = None,
    location: str | None = None,
    gcp_conn_id: str = "google_cloud_default",
    impersonation_chain: str | Sequence[str] | None = None,
    use_internal_ip: bool = False,
    use_dns_endpoint: bool = False,
) -> KubernetesCluster:
    """The cluster an operator names: GKE when ``cluster_name`` is set (its endpoint and CA
    looked up once through the google provider), else the Kubernetes connection."""
    chain = (
        impersonation_chain
        if impersonation_chain is None or isinstance(impersonation_chain, str)
        else tuple(impersonation_chain)
    )
    if not cluster_name:
        return KubernetesCluster(conn_id=kubernetes_conn_id)
    if not location:
        raise ValueError("GKE mode needs location (and project_id) along with cluster_name.")
    from airflow.providers.google.cloud.hooks.kubernetes_engine import GKEHook
    from airflow.providers.google.cloud.operators.kubernetes_engine import GKEClusterAuthDetails

    cluster_hook = GKEHook(
        gcp_conn_id=gcp_conn_id, location=location, impersonation_chain=impersonation_chain
    )
    url, ca_cert = GKEClusterAuthDetails(
        cluster_name=cluster_name,
        project_id=project_id or cluster_hook.project_id,
        use_internal_ip=use_internal_ip,
        use_dns_endpoint=use_dns_endpoint,
        cluster_hook=cluster_hook,
    ).fetch_cluster_info()
    return KubernetesCluster(
        conn_id=None,
        cluster_url=url,
        ssl_ca_cert=ca_cert,
        gcp_conn_id=gcp_conn_id,
        impersonation_chain=chain,
        use_dns_endpoint=use_dns_endpoint,
    )
