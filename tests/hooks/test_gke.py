"""GKE mode: the trigger carries an endpoint and a Google connection id, never a token, and
mints a fresh token through the google provider's GKE hooks for its calls (Airflow #31648).

The Google side is a service-account key whose ``token_uri`` is the emulator, so the real
google-auth JWT grant runs. The endpoint lookup through Google's GKE API is ``test_cluster.py``'s.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.gke import GKEAsyncJobSetHook, GKEJobSetHook
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import manifest, succeed
from harness.k8s_emulator import Emulator
from tests.support.gke import ServiceAccount


@pytest.fixture
def google_connection(k8s: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """``google_cloud_default`` holding a service-account key that gets tokens from the
    emulator; the emulator then accepts only the tokens it minted."""
    account = ServiceAccount(f"{k8s.url}/token", project="proj")
    monkeypatch.setenv("AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT", account.connection)
    k8s.api.tokens.clear()


def gke(k8s: Emulator) -> KubernetesCluster:
    # use_dns_endpoint: no cluster CA to pin, since the emulator speaks plain HTTP.
    return KubernetesCluster(
        conn_id=None, cluster_url=k8s.url, ssl_ca_cert="", use_dns_endpoint=True
    )


def test_a_gke_cluster_builds_the_google_providers_hooks(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_GCP", json.dumps({"conn_type": "google_cloud_platform"}))
    cluster = KubernetesCluster(
        conn_id=None,
        cluster_url="https://10.0.0.1",
        ssl_ca_cert="Q0EK",
        gcp_conn_id="gcp",
        impersonation_chain=("a@p.iam.gserviceaccount.com", "b@p.iam.gserviceaccount.com"),
    )
    data = cluster.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert KubernetesCluster.from_dict(data) == cluster
    assert isinstance(cluster.hook(), GKEJobSetHook)
    hook = cluster.async_hook()
    assert isinstance(hook, GKEAsyncJobSetHook)
    assert hook._cluster_url == "https://10.0.0.1"
    assert hook._hook_kwargs["gcp_conn_id"] == "gcp"
    assert hook._hook_kwargs["impersonation_chain"] == cluster.impersonation_chain


async def test_the_trigger_mints_fresh_tokens_instead_of_carrying_one(k8s, google_connection):
    k8s.script(succeed(duration=0.5))
    cluster = gke(k8s)
    created = cluster.hook().create_jobset(manifest())
    minted_by_worker = len(k8s.api.minted)
    trigger = JobSetTrigger(
        name=created["metadata"]["name"],
        namespace="default",
        uid=created["metadata"]["uid"],
        cluster=cluster.to_dict(),
        log_lines=0,
    )
    _, kwargs = trigger.serialize()
    assert not any(token in json.dumps(kwargs) for token in k8s.api.minted)
    events = [e.payload async for e in JobSetTrigger(**kwargs).run()]
    assert events[0]["status"] == "success"
    assert minted_by_worker >= 1
    assert len(k8s.api.minted) > minted_by_worker  # the trigger got its own
    assert all(r.status != 401 for r in k8s.requests)
    await asyncio.sleep(0)
