"""The Airflow-retry drill: a try fails on a bug after step 20 was finalized; the next try (a
fresh JobSet, restart counter 0) resumes from step 20, because ``runtime.checkpoint_dir()`` is
the same for every try. Real JAX, real Orbax, through ``airflow dags test``."""

from __future__ import annotations

import sqlite3

import pytest

from tests.support.xcoms import xcoms

# Real Airflow retries of a real multi-process job: make check skips it.
pytestmark = pytest.mark.slow

DAG = """
from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator

with DAG("retry_resume", schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False):
    JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",
        image="ignored-locally",
        entrypoint="tests.support.programs:train_with_resume",
        entrypoint_kwargs={"die_at": None, "bug_at": 25},
        output_dir="OUTPUT/{{ run_id | replace(':', '-') | replace('+', '-') }}",
        retries=1,
        retry_delay=timedelta(0),
        backend="local",
    )
"""


@pytest.mark.timeout(600)
def test_a_retry_resumes_from_the_step_the_failed_try_finalized(airflow_home, tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "retry_resume.py").write_text(DAG.replace("OUTPUT", str(tmp_path / "out")))
    run = airflow_home.airflow("dags", "test", "retry_resume", dags_folder=dags, timeout=500)
    assert run.returncode == 0, run.stdout[-6000:]
    assert "[0/1] ValueError: a bug at step 25" in run.stdout, run.stdout[-8000:]  # try 1
    assert "[0/0] airflow-jax: resumed from step 20" in run.stdout, run.stdout[-8000:]  # try 2
    db = airflow_home.path / "airflow.db"
    (result,) = xcoms(db, "retry_resume", "train").values()
    assert result == {"resumed_from": 20, "w": 30.0, "restart_attempt": 0}  # a fresh JobSet
    (ledger,) = xcoms(db, "retry_resume", "train", "goodput").values()
    print("retry drill ledger (try 2):", ledger)
    assert ledger["resumed_from"] == 20 and ledger["restarts"] == {}
    with sqlite3.connect(db) as conn:
        (tries,) = conn.execute(
            "SELECT try_number FROM task_instance WHERE dag_id = 'retry_resume'"
        ).fetchone()
    assert tries == 2
