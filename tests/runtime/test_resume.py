"""``runtime.resumed_from()`` finds the newest finalized Orbax step by the sensor's own rules,
with the stdlib only, locally and in GCS; and a slice that loses a host after step 20 was
finalized restarts, resumes from 20 and finishes (real JAX, real Orbax)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_jax.exceptions import JaxCodeError
from tests.support.jobset_schema import REPO
from tests.support.local_runs import LOG, run_outcome
from tests.support.orbax_saves import save_steps

# Real JAX jobs killed and resumed from Orbax checkpoints: make check skips it.
pytestmark = pytest.mark.slow

PROBE = """
import json, sys
before = set(sys.modules)  # some site setups preload namespace packages such as google.cloud
from airflow_provider_jax.runtime import checkpoint_dir, resumed_from
found = resumed_from()
heavy = sorted(
    m for m in ("jax", "airflow", "google.cloud.storage", "kubernetes")
    if m in sys.modules and m not in before
)
print(json.dumps({"found": found, "again": resumed_from(), "dir": checkpoint_dir(), "heavy": heavy}))
"""


def probe(output_dir: str) -> dict:
    """Ask in a fresh interpreter, as a pod would, with only the runtime on the path."""
    env = {**os.environ, "AIRFLOW_JAX_OUTPUT_DIR": output_dir, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_a_local_run_resumes_from_its_newest_finalized_step(tmp_path: Path) -> None:
    checkpoints = tmp_path / "checkpoints"
    save_steps(str(checkpoints), [10, 20])
    (checkpoints / "30.orbax-checkpoint-tmp-1700000000").mkdir()  # a save cut short
    answer = probe(str(tmp_path))
    assert answer == {"found": 20, "again": 20, "dir": str(checkpoints), "heavy": []}


def test_a_fresh_run_has_nothing_to_resume(tmp_path: Path) -> None:
    assert probe(str(tmp_path))["found"] is None


def test_a_gcs_run_resumes_from_its_newest_finalized_step(gcs_emulator, gcs_bucket) -> None:
    save_steps(f"gs://{gcs_bucket}/run/checkpoints", [5, 15])
    unfinished = "run/checkpoints/25/default/x"  # items, but no commit_success.txt yet
    gcs_emulator.put_objects(gcs_bucket, [(unfinished, b"partial")])
    answer = probe(f"gs://{gcs_bucket}/run")
    assert (answer["found"], answer["heavy"]) == (15, [])


@pytest.mark.timeout(240)
def test_a_lost_host_restarts_the_slice_which_resumes_from_the_finalized_step(
    tmp_path: Path, caplog
) -> None:
    caplog.set_level(logging.INFO, logger=LOG.name)
    outcome = run_outcome("train_with_resume", max_restarts=1, output_dir=str(tmp_path / "run"))
    assert outcome.result == {"resumed_from": 20, "w": 30.0, "restart_attempt": 1}  # restored
    assert outcome.report == {"step": 30, "w": 30.0}
    assert outcome.resumed_from == 20
    log = "\n".join(caplog.messages)
    assert "job: restart 1/1 after a disruption on [0/1]: killed by SIGKILL" in log
    assert "[0/0] airflow-jax: resumed from step 20" in log
    ledger = outcome.goodput
    print("disruption drill ledger:", ledger)
    assert ledger["restarts"] == {"disruption": 1} and ledger["resumed_from"] == 20
    assert ledger["chips"] == 8  # tpu-v5litepod-8: 2 hosts x 4 chips
    parts = sum(ledger[k] for k in ("queued_s", "startup_s", "productive_s", "lost_s"))
    assert ledger["lost_s"] > 0 and ledger["productive_s"] > 0 and parts <= ledger["wall_s"] + 0.05
    # Rounded from unrounded seconds: within a rounding step of the rounded fields' ratio.
    assert abs(ledger["goodput"] - ledger["productive_s"] / ledger["wall_s"]) < 0.002


@pytest.mark.timeout(240)
def test_a_preemption_notice_saves_at_the_step_jax_agreed_and_the_restart_loses_nothing(
    tmp_path: Path, caplog
) -> None:
    """Host 1 gets SIGTERM: JAX's preemption service picks one step for both processes, the
    on_preemption hook saves there, both exit 143, and the restart resumes from that step."""
    caplog.set_level(logging.INFO, logger=LOG.name)
    outcome = run_outcome("preempted_once", max_restarts=1, output_dir=str(tmp_path / "run"))
    log = "\n".join(caplog.messages)
    saved = {int(s) for s in re.findall(r"preempted \(SIGTERM\); saving at step (\d+)", log)}
    (step,) = saved  # the same step on both processes
    assert step >= 10
    # w restored from the hook's save (JAX's notifier may take a second: many tiny steps).
    w = float(max(step, 30))
    assert outcome.result == {"resumed_from": step, "w": w, "restart_attempt": 1}
    assert re.search(r"restart 1/1 after a disruption on \[0/\d\]: Preempted: SIGTERM", log)
    ledger = outcome.goodput
    print("preemption drill ledger:", ledger)
    assert ledger["restarts"] == {"disruption": 1} and ledger["resumed_from"] == step


@pytest.mark.timeout(240)
def test_a_bug_fails_the_task_at_once_with_restarts_to_spare(tmp_path: Path) -> None:
    """Host 1 raises ValueError at step 5 with max_restarts=3: no restart, the error leads with
    host 1's traceback, and the try ends in its first attempt (how long that takes depends on
    the machine's load: ``bench`` measures time, this checks states)."""
    with pytest.raises(JaxCodeError) as raised:
        run_outcome(
            "train_with_resume",
            max_restarts=3,
            output_dir=str(tmp_path / "run"),
            entrypoint_kwargs={"die_at": None, "bug_at": 5},
        )
    error = raised.value
    assert str(error).splitlines()[0] == "[0/1] ValueError: a bug at step 5"  # cause first
    assert "no restart" in error.summary
    ledger = error.goodput
    print("code-error drill ledger:", ledger)
    assert ledger["restarts"] == {}
    attempts = [p["attempt"] for p in ledger["phases"] if p["attempt"] is not None]
    assert set(attempts) == {0}, ledger["phases"]  # no second attempt was started
