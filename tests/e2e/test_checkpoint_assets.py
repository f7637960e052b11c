"""Checkpoints as assets on a real Airflow: api-server, scheduler, dag-processor and two
triggerers (LocalExecutor, PostgreSQL), the local backend running real JAX and Orbax.

``train_continuous`` saves a step every 10; ``evaluate_checkpoints`` (an ``AssetWatcher`` on
the directory) must run exactly once per finalized step, with that step, while the triggerer
holding the watcher is SIGKILLed twice and the other one takes over. Then the same on the GCS
emulator, and the request rate of a watcher.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from harness.gcs_emulator import GcsEmulator
from tests.support.airflow_stack import AirflowStack, airflow_stack
from tests.support.jobset_schema import REPO
from tests.support.postgres import PostgresServer
from tests.support.triggerers import Triggerers

pytestmark = pytest.mark.timeout(1200)

POLL_SECONDS = 3
BUCKET = "continuous-ckpts"
WATCHED = "train_continuous_checkpoints"
SHIPPED = (
    "train_continuous.py",
    "evaluate_checkpoints.py",
    "evaluate_each_step.py",
    "quickstart_train.py",
)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer, gcs_emulator: GcsEmulator
):
    home = tmp_path_factory.mktemp("checkpoint-assets")
    dags = home / "dags"
    dags.mkdir()
    for name in SHIPPED:  # the example pair as shipped
        (dags / name).symlink_to(REPO / "dags" / name)
    (dags / "gcs_checkpoints.py").symlink_to(Path(__file__).parent / "dags" / "gcs_checkpoints.py")
    gcs_emulator.create_bucket(BUCKET)
    env = {
        "AIRFLOW__JAX__DEFAULT_BACKEND": "local",
        "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "10",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        "JAX_CONTINUOUS_DIR": str(home / "continuous"),
        "JAX_CONTINUOUS_GCS_DIR": f"gs://{BUCKET}/continuous",
        "JAX_CHECKPOINT_POLL_SECONDS": str(POLL_SECONDS),
        "PYTHONPATH": f"{REPO}:{dags}",
    }
    with airflow_stack(home, dags, postgres.migrated_database(), env) as running:
        yield running


class WatcherTriggerers(Triggerers):
    """Two triggerers, and which one holds the checkpoint watcher."""

    def owner(self) -> str:
        rows = self.stack.query(
            "SELECT t.triggerer_id FROM trigger t JOIN asset_watcher w ON w.trigger_id = t.id"
            " JOIN asset a ON a.id = w.asset_id WHERE a.name = :asset",
            asset=WATCHED,
        )
        owners = [self.name_of(job) for (job,) in rows if job is not None]
        return next((owner for owner in owners if owner), "")

    def kill_owner_between_announcements(self, after_step: int) -> int:
        """SIGKILL the triggerer holding the watcher once it announced a step past
        ``after_step``, at a moment when every stored event is also in its cursor (checked
        with the process stopped), and start it again. Returns the last step announced
        before the kill (the restart takes a while: the other triggerer announces meanwhile)."""
        deadline = time.monotonic() + 240
        while True:
            assert time.monotonic() < deadline, self.why_not_announced()
            name = self.owner()
            steps, at = announced(self.stack), cursor(self.stack)
            if name and steps and max(steps) > after_step and at == max(steps):
                proc = self.stack.procs[name]
                proc.send_signal(signal.SIGSTOP)
                if announced(self.stack) == steps and cursor(self.stack) == at:
                    self.stack.kill(name, signal.SIGKILL)
                    self.start(name)
                    return max(steps)
                proc.send_signal(signal.SIGCONT)
            time.sleep(0.3)

    def why_not_announced(self) -> str:
        lines = [
            f"{name}: {line}"
            for name in self.jobs
            for line in self.stack.logs(name).splitlines()
            if "orbax" in line or "finalized" in line or "watches" in line
        ]
        return "\n".join(
            [f"announced {announced(self.stack)}, cursor {cursor(self.stack)}", *lines[-40:]]
        )


def model_events(stack: AirflowStack) -> list[tuple[str | None, dict[str, Any]]]:
    """(partition key, extra) of each event of train_continuous's ``checkpoint_asset``."""
    rows = stack.query(
        "SELECT e.partition_key, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id"
        " WHERE a.name = 'train_continuous_model' ORDER BY e.id"
    )
    return [(key, _json(extra)) for key, extra in rows]


def partition_runs(stack: AirflowStack, dag_id: str) -> dict[str, str]:
    """{partition key: state} of ``dag_id``'s runs."""
    rows = stack.query(
        "SELECT partition_key, state FROM dag_run WHERE dag_id = :dag_id", dag_id=dag_id
    )
    return dict(rows)


def announced(stack: AirflowStack, asset: str = WATCHED) -> list[int]:
    """The steps of the watcher's asset events, in order."""
    rows = stack.query(
        "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id"
        " WHERE a.name = :asset ORDER BY e.id",
        asset=asset,
    )
    return [_json(extra)["payload"]["step"] for (extra,) in rows]


def cursor(stack: AirflowStack, asset: str = WATCHED) -> int | None:
    rows = stack.query(
        "SELECT s.value FROM asset_state_store s JOIN asset a ON a.id = s.asset_id"
        " WHERE a.name = :asset AND s.key LIKE 'orbax_announced:%'",
        asset=asset,
    )
    return _json(rows[0][0])["step"] if rows else None


def steps_per_run(stack: AirflowStack, dag_id: str) -> dict[str, list[int]]:
    rows = stack.query(
        "SELECT dr.run_id, e.extra FROM dag_run dr"
        " JOIN dagrun_asset_event dae ON dae.dag_run_id = dr.id"
        " JOIN asset_event e ON e.id = dae.event_id WHERE dr.dag_id = :dag_id",
        dag_id=dag_id,
    )
    runs: dict[str, list[int]] = {}
    for run_id, extra in rows:
        runs.setdefault(run_id, []).append(_json(extra)["payload"]["step"])
    return runs


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def test_each_finalized_step_runs_evaluation_once_through_two_triggerer_kills(
    stack: AirflowStack,
) -> None:
    triggerers = WatcherTriggerers(stack)
    for dag_id in ("train_continuous", "evaluate_checkpoints"):
        stack.wait_for_dag(dag_id)
    stack.wait_until(triggerers.owner, 120, "the watcher to start", every=1)

    # Four steps, 6 s apart: the first kill comes after step 10 (or 20) is announced, the
    # second after a later one, which the other triggerer announced once it took the watcher
    # over (the killed one's restart can take the rest of the training on a loaded machine).
    run_id = stack.trigger(
        "train_continuous", {"steps": 40, "checkpoint_every": 10, "seconds_per_step": 0.6}
    )
    # The watch for a step starts with the training: a loaded machine may take a while to
    # get the task going at all.
    started = {"running", "deferred", "up_for_retry", "success", "failed"}
    stack.wait_for_state("train_continuous", run_id, "train", started, 300)
    first = triggerers.kill_owner_between_announcements(after_step=0)
    triggerers.kill_owner_between_announcements(after_step=first)

    train = stack.wait_for_state("train_continuous", run_id, "train", {"success", "failed"}, 420)
    assert train["state"] == "success", stack.logs("scheduler")
    steps = list(range(10, 41, 10))
    stack.wait_until(lambda: announced(stack) == steps, 120, "every step announced", every=1)

    # A step being written, and a temporary directory, never fire: checked after at least four
    # polls, while the evaluation runs go on.
    checkpoints = stack.home / "continuous" / "checkpoints"
    (checkpoints / "90" / "default").mkdir(parents=True)
    (checkpoints / "100.orbax-checkpoint-tmp-1" / "default").mkdir(parents=True)
    unfinished_since = time.monotonic()

    runs = stack.wait_for_runs("evaluate_checkpoints", len(steps), timeout=420)
    assert [r["state"] for r in runs] == ["success"] * len(steps), runs
    time.sleep(max(unfinished_since + 4 * POLL_SECONDS - time.monotonic(), 0))
    assert announced(stack) == steps
    # Gone again: Orbax would take step 90 for the newest and never save a lower one.
    shutil.rmtree(checkpoints / "90")
    shutil.rmtree(checkpoints / "100.orbax-checkpoint-tmp-1")
    per_run = steps_per_run(stack, "evaluate_checkpoints")
    assert sorted(per_run.values()) == [[s] for s in steps], per_run
    results = stack.xcoms("evaluate_checkpoints", "evaluate")
    assert sorted(r[0]["step"] for r in results.values()) == steps

    # The training task's own events: the newest step, the leader's report, the JobSet; one
    # without a partition key and one with the step as its key.
    events = model_events(stack)
    assert sorted(key or "" for key, _ in events) == ["", "40"], events
    for _, extra in events:
        assert extra["step"] == 40 and extra["path"] == f"{checkpoints}/40"
        assert extra["report"]["step"] == 40 and extra["jobset"]


def test_gcs_checkpoints_run_evaluation_once_each(
    stack: AirflowStack, gcs_emulator: GcsEmulator
) -> None:
    for dag_id in ("train_continuous_gcs", "evaluate_checkpoints_gcs"):
        stack.wait_for_dag(dag_id)
    run_id = stack.trigger("train_continuous_gcs")
    train = stack.wait_for_state(
        "train_continuous_gcs", run_id, "train", {"success", "failed"}, 420
    )
    assert train["state"] == "success", stack.logs("scheduler")
    steps = [10, 20, 30]
    stack.wait_until(
        lambda: announced(stack, "gcs_checkpoints") == steps, 120, "every step announced", every=1
    )
    runs = stack.wait_for_runs("evaluate_checkpoints_gcs", len(steps), timeout=420)
    assert [r["state"] for r in runs] == ["success"] * len(steps), runs
    per_run = steps_per_run(stack, "evaluate_checkpoints_gcs")
    assert sorted(per_run.values()) == [[s] for s in steps], per_run
    read = sorted(
        (r[0]["step"], r[0]["w"])
        for r in stack.xcoms("evaluate_checkpoints_gcs", "evaluate").values()
    )
    assert read == [(s, float(s)) for s in steps]  # each run restored its own step from GCS

    # Request economy, measured: with nothing new, a poll is one listing of the directory.
    before = len(gcs_emulator.list_requests(BUCKET))
    polls = 4
    time.sleep(polls * POLL_SECONDS)
    listed = len(gcs_emulator.list_requests(BUCKET)) - before
    print(f"GCS watcher, {polls} polls {POLL_SECONDS}s apart: {listed} list requests")
    assert listed <= polls + 1  # one partial poll at either end


def test_each_step_runs_the_partitioned_consumer_once_and_a_run_per_step_redoes_one(
    stack: AirflowStack,
) -> None:
    """``evaluate_each_step`` (``PartitionedAssetTimetable`` on train_continuous's
    ``checkpoint_asset``) runs once per step a training run finishes with, the step as its
    partition key; a run triggered per step evaluates earlier steps again, two of them here.
    (Airflow 3.3's backfill refuses an asset-triggered DAG: it creates runs from time.)"""
    for dag_id in ("train_continuous", "evaluate_each_step"):  # each unpaused, whatever ran first
        stack.wait_for_dag(dag_id)
    for steps in (50, 60):  # each run goes on from the newest step, and ends on a new one
        run_id = stack.trigger("train_continuous", {"steps": steps, "checkpoint_every": 10})
        train = stack.wait_for_state(
            "train_continuous", run_id, "train", {"success", "failed"}, 420
        )
        assert train["state"] == "success", stack.logs("scheduler")
        stack.wait_until(
            lambda steps=steps: (
                partition_runs(stack, "evaluate_each_step").get(str(steps)) in ("success", "failed")
            ),
            420,
            lambda steps=steps: f"step {steps}: {partition_runs(stack, 'evaluate_each_step')}",
            every=1,
        )
    for step in ("10", "20"):  # the two earlier steps again, one run each
        body = {"logical_date": None, "partition_key": step}
        stack.api("POST", "/api/v2/dags/evaluate_each_step/dagRuns", body)
    stack.wait_until(
        lambda: all(
            partition_runs(stack, "evaluate_each_step").get(k) in ("success", "failed")
            for k in ("10", "20")
        ),
        420,
        lambda: f"steps 10 and 20 evaluated: {partition_runs(stack, 'evaluate_each_step')}",
        every=1,
    )
    runs = partition_runs(stack, "evaluate_each_step")
    assert {k: runs[k] for k in ("10", "20", "50", "60")} == dict.fromkeys(
        ("10", "20", "50", "60"), "success"
    ), runs
    evaluated = sorted(r["step"] for r in stack.xcoms("evaluate_each_step", "evaluate").values())
    assert {10, 20, 50, 60} <= set(evaluated), evaluated
    assert evaluated.count(50) == evaluated.count(60) == 1  # once per step
