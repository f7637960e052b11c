"""Fixtures that put the real control plane behind Airflow's ``kubernetes_default``.

One control plane per test session, started in a temporary folder (``make cluster``'s own one,
if any, is left alone). Tests that use it are marked ``real_cluster``: ``pytest -m
real_cluster`` runs them alone.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from harness.real_cluster.components import ControlPlaneError
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection

# This machine's host name before any node ran: a node names its own UTS namespace, never
# the machine (tests/real_cluster/test_real_nodes.py checks it stays so).
MACHINE_HOSTNAME = socket.gethostname()


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    try:
        plane = ControlPlane(tmp_path_factory.mktemp("control-plane")).up()
    except ControlPlaneError as err:
        pytest.fail(f"the real control plane did not start: {err}", pytrace=False)
    yield plane
    plane.down()


@pytest.fixture
def real_k8s(real_cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> ControlPlane:
    """The real control plane as ``kubernetes_default``, as its admin."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", connection(real_cluster.kubeconfig()))
    return real_cluster
