"""Every example DAG runs as shipped on the local backend, through ``airflow dags test``.
``scheduled_training`` runs where its point is: a two-day backfill from the UI's dialog, one
``output_dir`` per logical date (``tests/e2e/test_running_airflow.py``); the quickstart runs as
``make demo`` (``tests/dags/test_quickstart.py``)."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from tests.support.jobset_schema import REPO
from tests.support.xcoms import xcoms

# Each example DAG through `airflow dags test`: make check skips it.
pytestmark = pytest.mark.slow


def run_dag(
    airflow_home, tmp_path, *args: str, env: dict[str, str] | None = None, succeeds: bool = True
):
    """``airflow dags test *args``'s output. A run that succeeds logs no error: a newcomer
    reads ``[error]`` as something to fix (Airflow logs a pull of a missing XCom as one)."""
    run = airflow_home.airflow(
        "dags",
        "test",
        *args,
        dags_folder=REPO / "dags",
        env={
            "AIRFLOW__JAX__DEFAULT_BACKEND": "local",
            "AIRFLOW_VAR_JAX_OUTPUT_ROOT": str(tmp_path),
            **(env or {}),
        },
        timeout=300,
    )
    if not succeeds:
        assert run.returncode != 0, run.stdout[-6000:]
        return run.stdout
    assert run.returncode == 0, run.stdout[-6000:]
    errors = [line for line in run.stdout.splitlines() if re.search(r"\[error\s*\]", line)]
    assert errors == [], errors
    return run.stdout


def test_parameterised_run_takes_conf(airflow_home, tmp_path):
    conf = {"steps": 30, "learning_rate": 0.1, "run_name": "sweep-7"}
    out = run_dag(airflow_home, tmp_path, "parameterised_run", "--conf", json.dumps(conf))
    assert "sweep-7: loss" in out and "after 30 steps" in out


@pytest.mark.parametrize(
    ("dag_id", "line"),
    [
        ("multislice_tpu", r"2 slices, 16 devices: loss \d"),
        ("elastic_training", r"elastic: 2 slices at the end, 16 devices, loss \d"),
        ("multinode_gpu", r"2 nodes, 16 GPUs: loss \d"),
        ("capacity_choices", r"train loss \d\.\d+; best sweep lr 0\.0\d"),
        # the single controller: one process sees both slices' 32 chips
        ("pathways_training", r"(?s)Pathways, emulated locally.*Pathways: 1 process, 32 devices"),
        # a folder shipped beside the DAG file reaches the function as a path
        ("data_training", r"Data: 256 rows, loss 0\.000"),
    ],
)
def test_example_runs_locally(airflow_home, tmp_path, dag_id, line):
    assert re.search(line, run_dag(airflow_home, tmp_path, dag_id))


@pytest.mark.timeout(600)
def test_sweep_maps_four_trials_and_picks_the_best(airflow_home, tmp_path):
    out = run_dag(airflow_home, tmp_path, "sweep")
    assert re.search(r"BEST TRIAL lr=0\.\d+: loss \d", out), out[-3000:]
    db = airflow_home.path / "airflow.db"
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT map_index, value FROM xcom WHERE dag_id = 'sweep' AND task_id = 'trial'"
            " AND key = 'return_value' ORDER BY map_index"
        ).fetchall()
    assert [m for m, _ in rows] == [0, 1, 2, 3]
    assert all(json.loads(v)["step"] == 30 for _, v in rows)
    with sqlite3.connect(db) as conn:
        rendered = conn.execute(
            "SELECT map_index, rendered_fields FROM rendered_task_instance_fields"
            " WHERE dag_id = 'sweep' AND task_id = 'trial' ORDER BY map_index"
        ).fetchall()
    dirs = [json.loads(fields)["output_dir"] for _, fields in rendered]
    assert [d.rsplit("/", 1)[-1] for d in dirs] == [f"trial-{i}" for i in range(4)], dirs
    # Each mapped trial shows its own JobSet (Airflow keeps the first 4096 characters here).
    manifests = [json.loads(fields)["jobset_manifest"] for _, fields in rendered]
    names = {re.search(r"\n  name: (\S+)", m)[1] for m in manifests}
    assert len(names) == 4, manifests[0][:600]


@pytest.mark.timeout(600)
def test_checkpoint_pipeline_survives_its_disruption_drill_in_one_try(airflow_home, tmp_path):
    """Host 1 dies at step 30 on the first attempt: the slice restarts, resumes from step 20
    (the last finalized save), finishes, and the evaluation reads step 40, in one try."""
    lineage = tmp_path / "openlineage.jsonl"  # the OpenLineage provider's file transport
    transport = {"type": "file", "log_file_path": str(lineage), "append": True}
    out = run_dag(
        airflow_home,
        tmp_path,
        "checkpoint_pipeline",
        env={"AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport)},
    )
    assert re.search(r"step 40: eval loss \d", out)
    assert "restart 1/2 after a disruption on [0/1]: killed by SIGKILL" in out
    db = airflow_home.path / "airflow.db"

    def one(key: str):
        (value,) = xcoms(db, "checkpoint_pipeline", "train", key).values()
        return value

    assert one("return_value")["resumed_from"] == one("resumed_from") == 20
    ledger = one("goodput")
    print("checkpoint_pipeline drill ledger:", ledger)
    assert (ledger["restarts"], ledger["resumed_from"], ledger["chips"]) == (
        {"disruption": 1},
        20,
        8,
    )
    with sqlite3.connect(db) as conn:
        (tries,) = conn.execute(
            "SELECT try_number FROM task_instance WHERE dag_id = 'checkpoint_pipeline' "
            "AND task_id = 'train'"
        ).fetchone()
    assert tries == 1

    # Lineage: train wrote its checkpoints; evaluate read step 40 of them.
    complete = {
        event["job"]["name"].rsplit(".", 1)[-1]: event
        for event in map(json.loads, lineage.read_text().splitlines())
        if event.get("eventType") == "COMPLETE" and "." in event["job"]["name"]
    }
    (written,) = [(d["namespace"], d["name"]) for d in complete["train"]["outputs"]]
    assert written[0] == "file" and written[1].startswith(f"{tmp_path}/checkpoint_pipeline/")
    assert written[1].endswith("/checkpoints")
    read = [(d["namespace"], d["name"]) for d in complete["evaluate"]["inputs"]]
    assert read == [("file", f"{written[1]}/40")]


@pytest.mark.timeout(600)
def test_the_checkpoint_consumers_run_by_hand_on_the_step_their_conf_names(airflow_home, tmp_path):
    """No asset event starts a run of ``airflow dags test``: a consumer run with neither a
    partition key nor an event fails at once saying what it needs (not ``int('None')``, nor
    a success that evaluated nothing); given the step as conf, each evaluates that step of
    the checkpoints ``train_continuous`` saved."""
    env = {"JAX_CONTINUOUS_DIR": str(tmp_path / "continuous")}
    for dag_id in ("evaluate_each_step", "evaluate_checkpoints"):
        out = run_dag(airflow_home, tmp_path, dag_id, env=env, succeeds=False)
        assert "give the step as the 'step' param" in out, out[-6000:]
        assert "invalid literal" not in out and "Starting 1 local JAX process" not in out
    conf = json.dumps({"steps": 20, "checkpoint_every": 10})
    run_dag(airflow_home, tmp_path, "train_continuous", "--conf", conf, env=env)
    for dag_id in ("evaluate_each_step", "evaluate_checkpoints"):
        out = run_dag(airflow_home, tmp_path, dag_id, "--conf", '{"step": 20}', env=env)
        assert re.search(r"EVAL step 20: eval loss \d", out), out[-6000:]
