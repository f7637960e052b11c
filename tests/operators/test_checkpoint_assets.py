"""``checkpoint_asset=`` through ``airflow dags test``, read back from the metadata database:
each finalized step is two events on the asset, one with the step as its partition key (what
a ``PartitionedAssetTimetable`` consumer is queued for, per step) and one without (what a
``schedule=[asset]`` consumer is queued for, as before); no step, no event. The training task
and ``OrbaxCheckpointSensor`` alike. Argument checks at parse."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from airflow.sdk import Asset

from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from tests.support.dag_runs import task_states

ASSET = Asset(name="a", uri="/tmp/a/checkpoints")
JOB = {"task_id": "t", "accelerator": "tpu-v5litepod-4", "backend": "local", "entrypoint": "m:f"}

DAGS = Path(__file__).parent / "dags"


def test_the_asset_is_declared_beside_the_alias_and_not_twice():
    op = JaxTpuSliceOperator(**JOB, output_dir="/tmp/a", checkpoint_asset=ASSET)
    assert [type(o).__name__ for o in op.outlets] == ["AssetAlias", "Asset"]
    with pytest.raises(ValueError, match=r"t: checkpoint_asset 'a' is in outlets= too"):
        JaxTpuSliceOperator(**JOB, output_dir="/tmp/a", checkpoint_asset=ASSET, outlets=[ASSET])
    with pytest.raises(TypeError, match=r"s: checkpoint_asset must be an Asset, got 'a'"):
        OrbaxCheckpointSensor(task_id="s", checkpoint_dir="/tmp/c", checkpoint_asset="a")


def events(db, asset: str) -> list[tuple[str | None, dict]]:
    rows = db.execute(
        "SELECT e.partition_key, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id"
        " WHERE a.name = ? ORDER BY e.id",
        (asset,),
    )
    return [(key, json.loads(extra)) for key, extra in rows]


@pytest.mark.slow
def test_each_step_is_an_event_with_its_partition_key_and_one_without(airflow_home, tmp_path):
    # The consumers unpaused, as Airflow queues no run for a paused DAG: made so here, and
    # unpaused where an earlier test's `airflow dags test` of this folder stored them paused.
    env = {"JAX_TEST_OUT": str(tmp_path), "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}
    reserialized = airflow_home.airflow("dags", "reserialize", dags_folder=DAGS, env=env)
    assert reserialized.returncode == 0, reserialized.stdout[-4000:]
    consumers = "^(each_step|every_new_checkpoint)$"
    unpaused = airflow_home.airflow(
        "dags", "unpause", "--treat-dag-id-as-regex", "-y", consumers, dags_folder=DAGS, env=env
    )
    assert unpaused.returncode == 0, unpaused.stdout[-4000:]
    run = airflow_home.airflow("dags", "test", "jax_checkpoint_assets", dags_folder=DAGS, env=env)
    states = task_states(airflow_home, "jax_checkpoint_assets")
    assert states == {"trained": ("success", 1), "untrained": ("success", 1),
                      "sensed": ("success", 1)}, run.stdout[-6000:]  # fmt: skip
    with sqlite3.connect(airflow_home.path / "airflow.db") as db:
        trained = events(db, "held_out_steps")
        assert sorted(k or "" for k, _ in trained) == ["", "10"], trained
        assert all(e["step"] == 10 and e["jobset"] for _, e in trained)
        assert events(db, "held_out_no_steps") == []  # no finalized step: no event at all
        sensed = events(db, "held_out_sensed")
        assert sorted(k or "" for k, _ in sensed) == ["", "10"], sensed
        # Each kind of consumer is queued once: the partitioned one for step 10.
        queued = db.execute(
            "SELECT target_dag_id, partition_key FROM asset_partition_dag_run"
            " WHERE target_dag_id IN ('each_step', 'every_new_checkpoint')"
        ).fetchall()
        assert queued == [("each_step", "10")], queued
        plain = db.execute(
            "SELECT target_dag_id FROM asset_dag_run_queue"
            " WHERE target_dag_id IN ('each_step', 'every_new_checkpoint')"
        ).fetchall()
        assert plain == [("every_new_checkpoint",)], plain
    assert "No event for asset 'held_out_no_steps': no finalized checkpoint step" in run.stdout
