"""Fixtures that put the Kubernetes emulator behind Airflow's ``kubernetes_default``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.k8s_emulator import Emulator
from harness.k8s_emulator.rbac import docs_role
from tests.support.jobset_schema import jobset_validator


def checked_emulator() -> Emulator:
    """An emulator (not started) that checks every JobSet it receives against the CRD, and
    every request against the docs' Role: every Kubernetes test proves that Role sufficient
    for what the test does."""
    validator = jobset_validator()

    def validate(body: dict) -> list[str]:
        return [
            f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(body)
        ]

    return Emulator(validate, role=docs_role())


@pytest.fixture(scope="session")
def k8s_emulator() -> Iterator[Emulator]:
    """One emulator for the session, served over plain HTTP."""
    emulator = checked_emulator().start()
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
