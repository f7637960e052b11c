"""The test session's Airflow: its AIRFLOW_HOME with a metadata DB migrated once, and a way to
run ``airflow`` CLI commands (``dags test``) against it with this worktree's code."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AIRFLOW = Path(sys.executable).with_name("airflow")


def airflow_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for an ``airflow`` subprocess: this worktree first on the path."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        **(extra or {}),
    }


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """AIRFLOW_HOME (set by the root conftest) with its SQLite DB migrated, once a session."""
    home = Path(os.environ["AIRFLOW_HOME"])
    subprocess.run(
        [str(AIRFLOW), "db", "migrate"],
        env=airflow_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    return home


def dags_test(
    dag_id: str,
    logical_date: str,
    env: Mapping[str, str],
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``airflow dags test`` in a subprocess (triggers run inline, as a triggerer would)."""
    return subprocess.run(
        [str(AIRFLOW), "dags", "test", dag_id, logical_date],
        env=airflow_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def task_states(dag_id: str) -> dict[str, tuple[str | None, int]]:
    """{task_id: (state, try_number)} of the DAG's latest run, from the metadata DB."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstance).filter(TaskInstance.dag_id == dag_id).all()
        return {ti.task_id: (ti.state, ti.try_number) for ti in rows}
