"""Test-wide setup: an isolated AIRFLOW_HOME, the JobSet CRD schema for manifest checks, and
the shared GCS/Orbax fixtures."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# One folder for everything this run puts in the system temp directory (its AIRFLOW_HOME,
# pytest's tmp_path, what the product and every subprocess write there): TMPDIR points into
# it, and it goes when the run ends, so a run leaves the temp directory as it found it.
# Traversable by all: PostgreSQL's user reaches its own folder below it. Each pytest process
# (an xdist worker, a test's own pytest run) makes its folder in the temp directory the first
# one found, not in its parent's: nested, a path grows past what a Unix socket's name holds
# (Chromium's SingletonSocket, then, cannot be made, and the browser exits at once).
SYSTEM_TMP = os.environ.setdefault("JAX_TESTS_SYSTEM_TMPDIR", tempfile.gettempdir())
RUN_TMP = Path(tempfile.mkdtemp(prefix="airflow-jax-tests-", dir=SYSTEM_TMP))
(RUN_TMP / "tmp").mkdir()
for folder in (RUN_TMP, RUN_TMP / "tmp"):
    folder.chmod(0o755)
os.environ["TMPDIR"] = str(RUN_TMP / "tmp")
tempfile.tempdir = None  # gettempdir() reads TMPDIR again
(RUN_TMP / "airflow-home").mkdir()
# Always the run's own, not the caller's (the Makefile exports the demo's .airflow): two
# test workers, or a test beside `make demo`, never share a metadata database.
os.environ["AIRFLOW_HOME"] = str(RUN_TMP / "airflow-home")
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from harness import reaper  # noqa: E402 - AIRFLOW_HOME and TMPDIR first
from tests.support.jobset_schema import jobset_validator  # noqa: E402

pytest_plugins = [
    "tests.support.airflow_home",
    "tests.support.browser",
    "tests.support.cluster_worker",
    "tests.support.k8s_fixtures",
    "tests.support.gke",
    "tests.support.orbax_fixtures",
    "tests.support.postgres",
    "tests.support.real_cluster_fixtures",
]


# Test tiers (``make check`` runs neither): what a test needs, read from the fixtures it uses,
# so a new test lands in the right tier without anyone remembering to mark it.
TIER_FIXTURES = {
    "real_cluster": ("real_cluster", "real_k8s"),
    "airflow_stack": ("postgres", "browser_session", "docker_engine"),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in TIER_FIXTURES.items():
            if used.intersection(fixtures):
                item.add_marker(marker)


def pytest_configure(config: pytest.Config) -> None:
    """Every process group and daemon the run starts (the control plane, the fake kubelet's
    pods, PostgreSQL, a running Airflow) dies with the run, even one killed by a signal."""
    reaper.start(Path(tempfile.mkdtemp(prefix="airflow-jax-reaper-")))


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(RUN_TMP, ignore_errors=True)


def pytest_report_header() -> list[str]:
    """What the suite's run time depends on most, on the first lines of CI's log."""
    writes = "not written" if sys.dont_write_bytecode else "written at first import"
    return [f"cores: {os.cpu_count()}; bytecode: {writes}"]


@pytest.fixture(scope="session")
def validate_jobset() -> Callable[[dict[str, Any]], None]:
    """Validate a manifest against the pinned JobSet release's CRD (its v1alpha2 schema)."""
    return jobset_validator().validate
