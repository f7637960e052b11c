"""What the Kubernetes backend says when no cluster is configured at all."""

from __future__ import annotations

import logging

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.contract import JobSettings
from harness.jobsets import manifest


def backend(tmp_path) -> KubernetesBackend:
    log = logging.getLogger(__name__)
    return KubernetesBackend(JobSettings(name="unused", namespace="default", log=log))


def test_no_cluster_configured_says_how_to_run_locally_or_on_gke(tmp_path, monkeypatch):
    """A newcomer who forgot backend="local": not the client's "Service host/port is not set"."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", '{"conn_type": "kubernetes"}')
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config either
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    body = manifest("no-cluster")
    with pytest.raises(AirflowFailException) as caught:
        backend(tmp_path).start(body)
    message = str(caught.value)
    for advice in ("backend='local'", "[jax] default_backend = local", "cluster_name",
                   "'kubernetes_default' connection"):  # fmt: skip
        assert advice in message, message
