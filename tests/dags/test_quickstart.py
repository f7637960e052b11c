"""The quickstart DAG, for real, as the README's first command runs it: ``make demo`` in a
fresh shell (``airflow dags test`` on the local backend, a project-local Airflow home)."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from tests.support.fresh_shell import fresh_shell
from tests.support.jobset_schema import REPO


@pytest.mark.slow  # the README's first command, from a fresh shell
@pytest.mark.timeout(600)
def test_make_demo_trains_across_two_processes():
    status, out = fresh_shell("make demo")
    assert status == 0, out[-6000:]

    # A newcomer reads [error] and [warning] lines as something to fix: there are none.
    noise = [line for line in out.splitlines() if re.search(r"\[(error|warning)\s*\]", line)]
    assert noise == [], noise
    # The tasks, the JAX processes' lines and the result: none of the scheduler's bookkeeping.
    bookkeeping = ("next_dagrun_info", "Creating ORM DAG", "Filling up the DagBag", "::group::",
                   "::endgroup::", "Pushing xcom", "Task instance state updated")  # fmt: skip
    assert [line for line in out.splitlines() if any(b in line for b in bookkeeping)] == []
    assert "leader's result (XCom of task 'train'): loss=" in out, out[-3000:]
    # The leader's progress reached the task log as readable lines; the others' did not.
    progress = r"\[0/0\] step 60/60 \(100%\) · [\d.]+ steps/s: loss=\d"
    assert re.search(progress, out), out[-6000:]
    assert re.search(r"\[0/0\] step 30/60 \(50%\) · [\d.]+ steps/s · ETA \d+s: loss=", out)
    assert "[0/1] step" not in out
    banner = re.search(r"QUICKSTART RESULT: loss=(\S+) at step 60 \(2 processes, 8 devices\)", out)
    assert banner, out[-6000:]
    assert float(banner[1]) < 0.1  # it trained

    with sqlite3.connect(REPO / ".airflow" / "airflow.db") as db:
        rows = db.execute(
            "SELECT key, value FROM xcom WHERE dag_id = 'quickstart' AND task_id = 'train'"
            " AND run_id = (SELECT run_id FROM dag_run WHERE dag_id = 'quickstart'"
            " ORDER BY id DESC LIMIT 1)"  # the home is the project's, and keeps earlier runs
        ).fetchall()
    xcom = {key: json.loads(value) for key, value in rows}
    assert xcom["return_value"]["step"] == 60
    assert xcom["return_value"]["processes"] == 2
    assert xcom["last_report"] == {
        "step": 60,
        "total_steps": 60,
        "loss": xcom["return_value"]["loss"],
    }
