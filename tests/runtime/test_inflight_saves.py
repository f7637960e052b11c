"""An async Orbax save still being written when the function returns: the runtime finishes it
before the job succeeds, or fails the job naming the step (``runtime/inflight_saves.py``).
Real multi-process JAX and real Orbax, on the local backend."""

from __future__ import annotations

import re

import pytest

from airflow_provider_jax.checkpoints import CheckpointQuery, find_newest_finalized
from airflow_provider_jax.exceptions import JaxJobFailed
from harness.gcs_emulator import GcsEmulator
from tests.support.local_runs import run


def test_a_save_in_flight_at_return_is_finished_before_the_job_succeeds(tmp_path, caplog):
    result, _ = run("returns_while_saving", timeout_s=180, output_dir=str(tmp_path))

    assert result == {"saved": 3, "still_saving": True}  # caught in flight, as the issue saw
    checkpoints = tmp_path / "checkpoints"
    assert [p.name for p in checkpoints.iterdir()] == ["3"]  # no *.orbax-checkpoint-tmp left
    assert find_newest_finalized(CheckpointQuery(str(checkpoints))).step == 3
    assert any("save of step 3 was still being written" in m for m in caplog.messages)


def test_a_save_in_flight_that_fails_fails_the_job_naming_the_step(
    gcs_emulator: GcsEmulator, gcs_bucket: str
):
    run_dir = f"gs://{gcs_bucket}/run"
    # Every host's writes of the step fail (a bucket that turned read-only, say), so each host's
    # save fails and their finalize threads meet at Orbax's last barrier. (Where only the
    # primary's marker fails, the hosts wait in two different barriers of Orbax's until its
    # own barrier timeout, then fail: see runtime/inflight_saves.py.)
    gcs_emulator.reject_uploads("run/checkpoints/3/default/")

    with pytest.raises(JaxJobFailed) as failed:
        run(
            "returns_while_saving",
            timeout_s=180,
            output_dir=run_dir,
            entrypoint_kwargs={"megabytes": 1},
        )

    # Named by whichever of Orbax's threads raised first: the manager's, or its checkpointer's.
    assert re.search(
        rf"save of (step 3|{run_dir}/checkpoints/3) was still being written when the function "
        "returned, and it failed",
        str(failed.value),
    )
    assert find_newest_finalized(CheckpointQuery(f"{run_dir}/checkpoints")) is None


def test_a_program_that_asks_where_to_checkpoint_without_output_dir_is_told(caplog):
    result, _ = run("asks_for_checkpoint_dir", timeout_s=120)
    assert result is None
    told = [m for m in caplog.messages if "checkpoint_dir() is None" in m]
    assert len(told) == 1 and "Set output_dir= on the task" in told[0], caplog.messages
