"""The quickstart DAG, for real: ``airflow dags test`` on the local backend."""

from __future__ import annotations

import json
import re
import sqlite3

from tests.support.jobset_schema import REPO


def test_quickstart_trains_across_two_processes(airflow_home):
    run = airflow_home.airflow(
        "dags",
        "test",
        "quickstart",
        dags_folder=REPO / "dags",
        env={"AIRFLOW__JAX__DEFAULT_BACKEND": "local"},
    )
    assert run.returncode == 0, run.stdout[-6000:]
    # A newcomer's first run shows no error line (the local backend has no JobSet link).
    errors = [line for line in run.stdout.splitlines() if re.search(r"\[error\s*\]", line)]
    assert errors == [], errors
    # The leader's progress reached the task log as readable lines; the others' did not.
    progress = r"\[0/0\] step 60/60 \(100%\) · [\d.]+ steps/s: loss=\d"
    assert re.search(progress, run.stdout), run.stdout[-6000:]
    assert re.search(r"\[0/0\] step 30/60 \(50%\) · [\d.]+ steps/s · ETA \d+s: loss=", run.stdout)
    assert "[0/1] step" not in run.stdout
    banner = re.search(
        r"QUICKSTART RESULT: loss=(\S+) at step 60 \(2 processes, 8 devices\)", run.stdout
    )
    assert banner, run.stdout[-6000:]
    assert float(banner[1]) < 0.1  # it trained

    with sqlite3.connect(airflow_home.path / "airflow.db") as db:
        rows = db.execute(
            "SELECT key, value FROM xcom WHERE dag_id = 'quickstart' AND task_id = 'train'"
        ).fetchall()
    xcom = {key: json.loads(value) for key, value in rows}
    assert xcom["return_value"]["step"] == 60
    assert xcom["return_value"]["processes"] == 2
    assert xcom["last_report"] == {
        "step": 60,
        "total_steps": 60,
        "loss": xcom["return_value"]["loss"],
    }
