"""GKE mode's endpoint lookup, for real: the google provider's ``GKEHook.get_cluster`` calls
Google's GKE API over gRPC (``tests/support/gke_api.py``) with a token from the Google
connection, and the JobSet hook then reaches the cluster over TLS, its CA pinned."""

from __future__ import annotations

import base64

import pytest
from google.api_core.exceptions import NotFound

from airflow_provider_jax.hooks.cluster import cluster_from
from harness.jobsets import manifest
from tests.support.gke import LOCATION, PATH, PROJECT, Gke
from tests.support.gke_api import HOST


@pytest.fixture
def google(gke: Gke, monkeypatch: pytest.MonkeyPatch) -> Gke:
    for name, value in gke.env.items():
        monkeypatch.setenv(name, value)
    gke.api.calls.clear()
    return gke


def test_a_named_gke_cluster_is_found_through_googles_api_and_reached_over_tls(google: Gke):
    cluster = cluster_from(kubernetes_conn_id="kubernetes_default", **google.operator_kwargs)
    assert cluster.is_gke and cluster.conn_id is None
    assert cluster.cluster_url == google.emulator.url  # https://, its port
    ca = google.api.clusters[PATH]
    assert base64.b64decode(cluster.ssl_ca_cert) == ca.ca_pem
    ((name, token),) = google.api.calls
    assert name == PATH
    assert google.account.signed(token)  # the Google connection's key signed it
    assert set(google.api.tunnels) == {f"{HOST}:443"}

    created = cluster.hook().create_jobset(manifest())
    name = created["metadata"]["name"]
    assert google.emulator.jobset(name) is not None
    assert google.emulator.api.minted  # with an OAuth token the connection's key got
    cluster.hook().delete_jobset(name, "default")


def test_an_unknown_gke_cluster_is_an_error_before_anything_is_created(google: Gke):
    submitted = len(google.emulator.submitted)
    with pytest.raises(NotFound, match="clusters/no-such-cluster"):
        cluster_from(
            kubernetes_conn_id=None,
            cluster_name="no-such-cluster",
            project_id=PROJECT,
            location=LOCATION,
        )
    assert len(google.emulator.submitted) == submitted
