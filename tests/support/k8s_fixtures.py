"""Fixtures that put the Kubernetes emulator behind Airflow's ``kubernetes_default``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jobset_schema import SCHEMA_PATH, jobset_validator
from tests.support.k8s_emulator import Emulator
from tests.support.k8s_emulator.rbac import docs_role


@pytest.fixture(scope="session")
def k8s_emulator() -> Iterator[Emulator]:
    """One emulator for the session; every JobSet it receives is checked against the CRD,
    and every request against the docs' Role."""
    validator = jobset_validator()
    if validator is None:
        pytest.skip(f"JobSet CRD schema not found at {SCHEMA_PATH}; set JOBSET_CRD_SCHEMA")

    def validate(body: dict) -> list[str]:
        return [
            f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(body)
        ]

    # RBAC on, with exactly the Role docs/kubernetes.md publishes: every Kubernetes test
    # proves it sufficient for what that test does.
    emulator = Emulator(validate, role=docs_role()).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def kubeconfig(k8s_emulator: Emulator, tmp_path: Path) -> Path:
    return k8s_emulator.kubeconfig(tmp_path / "kubeconfig.json")


@pytest.fixture
def k8s(
    k8s_emulator: Emulator, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Emulator]:
    """The emulator, emptied, with ``kubernetes_default`` pointing at it."""
    k8s_emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", k8s_emulator.connection(kubeconfig))
    yield k8s_emulator
    k8s_emulator.reset()
