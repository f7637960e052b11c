"""A migrated Airflow home (SQLite) shared by every test that runs the ``airflow`` CLI.

``airflow db migrate`` takes seconds, so one session fixture pays for it once. Each call picks
its own DAGs folder and extra env; commands run in a subprocess with this repository first on
PYTHONPATH, so they use the working tree's provider.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.jobset_schema import REPO

AIRFLOW = [sys.executable, "-m", "airflow"]  # the CLI of this venv's Airflow


@dataclass(frozen=True)
class AirflowHome:
    path: Path

    def env(self, dags_folder: Path | str | None = None, **extra: str) -> dict[str, str]:
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(self.path),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            # `airflow dags test` runs each trigger in-process, with no scheduler or executor
            # whose late event could race the resumed try: nothing to wait out.
            "AIRFLOW__JAX__RESUME_SETTLE_SECONDS": "0",
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder or self.path / "dags"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            **extra,
        }
        return env

    def airflow(
        self,
        *args: str,
        dags_folder: Path | str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 240,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``airflow *args``; stdout and stderr together in ``.stdout``."""
        return subprocess.run(
            [*AIRFLOW, *args],
            env=self.env(dags_folder, **(env or {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> AirflowHome:
    home = AirflowHome(tmp_path_factory.mktemp("airflow-home"))
    (home.path / "dags").mkdir()
    migrated = home.airflow("db", "migrate")
    assert migrated.returncode == 0, migrated.stdout[-4000:]
    return home
