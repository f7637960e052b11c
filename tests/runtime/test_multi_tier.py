"""``runtime.multi_tier``: Orbax's emergency checkpoint manager over the job's host-local tier
and ``<output_dir>/checkpoints``, in real multi-process JAX on the local backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_jax.runtime.orbax_steps import StepNameFormat, find_newest_local
from tests.support.local_runs import run_outcome

pytestmark = pytest.mark.slow  # real multi-process JAX jobs that restart: make test runs them
# Two slices of two hosts, restarted in place once, with a host-local tier.
TIERED = {"num_slices": 2, "max_restarts": 1, "restart_strategy": "in_place",
          "local_checkpoint_size": "64Mi"}  # fmt: skip


def test_a_restart_resumes_from_the_local_tier_ahead_of_the_persistent_one(tmp_path: Path):
    """Two slices of two hosts save to host memory every 2 steps and to output_dir every 5;
    a host dies after step 9. The restart resumes from the newest step every slice holds in
    memory (8, or 6 when the other slice had not finished 8 as its peer died), not from the
    persistent tier's step 5, and ends where an unbroken run would."""
    outcome = run_outcome("multi_tier_train", timeout_s=240, output_dir=str(tmp_path), **TIERED)
    result = outcome.result
    assert result["attempt"] == 1 and result["w"] == 12.0
    assert result["resumed_from"] in (6, 8)
    newest = find_newest_local(str(tmp_path / "checkpoints"), StepNameFormat(None, None))
    assert newest is not None and newest.step == 10  # what the sensor and the Assets see


def test_the_example_training_code_uses_the_tiers_when_the_job_has_one(tmp_path: Path):
    """``dags/quickstart_train.py`` under ``local_checkpoint_size``: host 1 dies at step 25,
    the restart resumes from host memory (step 24, or 23 when a slice had not finished 24 as
    its peer died; 20 on disk alone), training converges as an unbroken run does, and the
    evaluation reads the persistent tier's last step."""
    outcome = run_outcome(
        "quickstart_with_tiers",
        timeout_s=240,
        output_dir=str(tmp_path),
        entrypoint_kwargs={"disrupt_at_step": 25},
        **TIERED,
    )
    assert outcome.result["resumed_from"] in (23, 24)
    assert outcome.result["loss"] < 0.1
    evaluated = run_outcome(
        "quickstart_evaluate",
        timeout_s=120,
        entrypoint_kwargs={"checkpoint_dir": str(tmp_path / "checkpoints"), "step": 30},
    )
    assert evaluated.result["step"] == 30 and evaluated.result["eval_loss"] < 0.1


def test_a_restore_that_fails_falls_back_to_the_persistent_tier_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """Orbax's emergency manager failing to restore (a local tier a restart left half-written,
    a lost peer's copy) is not a fresh start: the persistent tier's newest step is restored,
    and stderr says which and why."""
    import jax.numpy as jnp
    import orbax.checkpoint as ocp

    from airflow_provider_jax.runtime import multi_tier

    monkeypatch.setenv("AIRFLOW_JAX_OUTPUT_DIR", str(tmp_path))
    persistent = ocp.CheckpointManager(tmp_path / "checkpoints", item_names=(multi_tier.ITEM,))
    multi_tier.save(persistent, 5, {"w": jnp.full(4, 5.0)})
    persistent.wait_until_finished()

    class Broken:  # stands in for Orbax's manager: it knows a newer step it cannot read
        def latest_step(self) -> int:
            return 8

        def restore(self, step: int, args: object = None) -> object:
            raise FileNotFoundError(f"step {step} is incomplete in the local tier")

    abstract = {"w": jnp.zeros(4)}
    state, step = multi_tier.restore_latest(Broken(), abstract)
    assert step == 5 and float(state["w"][0]) == 5.0
    said = capsys.readouterr().err
    assert "restoring step 8 failed (FileNotFoundError" in said
    assert f"restoring step 5 from the persistent tier {tmp_path / 'checkpoints'}" in said
