"""The README's first DAG runs where the README says it does: on a laptop, with the local
backend, through ``airflow dags test``, to its XCom (four processes for the four hosts)."""

from __future__ import annotations

import re

import pytest

from tests.support.jobset_schema import REPO
from tests.support.xcoms import xcoms

pytestmark = pytest.mark.slow  # a real 4-process JAX job through airflow dags test


def the_readme_dag() -> str:
    readme = (REPO / "README.md").read_text()
    return re.search(r"## The decorator.*?```python\n(.*?)```", readme, re.S)[1]


def test_the_readmes_first_dag_runs_on_the_local_backend(airflow_home, tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "nightly.py").write_text(the_readme_dag())
    run = airflow_home.airflow(
        "dags", "test", "nightly", "2026-11-28",
        dags_folder=dags, env={"AIRFLOW__JAX__DEFAULT_BACKEND": "local"}, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-6000:]
    said = [line for line in run.stdout.splitlines() if re.search(r"\[(error|warning)\s*\]", line)]
    assert [line for line in said if "graphviz" not in line] == []  # Airflow's own, bare CLI
    (result,) = xcoms(airflow_home.path / "airflow.db", "nightly", "train").values()
    assert result == {"steps": 100, "total": 16.0}
