"""``runtime.multi_tier``: Orbax's emergency checkpoint manager over the job's host-local tier
and ``<output_dir>/checkpoints``, in real multi-process JAX on the local backend."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_jax.runtime.orbax_steps import StepNameFormat, find_newest_local
from tests.support.local_runs import run_outcome


def test_a_restart_resumes_from_the_local_tier_ahead_of_the_persistent_one(tmp_path: Path):
    """Two slices of two hosts save to host memory every 2 steps and to output_dir every 5;
    a host dies after step 9. The restart resumes from step 8, which every slice holds
    locally, not from the persistent tier's step 5, and ends where an unbroken run would."""
    outcome = run_outcome(
        "multi_tier_train",
        timeout_s=240,
        num_slices=2,
        max_restarts=1,
        restart_strategy="in_place",
        local_checkpoint_size="64Mi",
        output_dir=str(tmp_path),
    )
    assert outcome.result == {"attempt": 1, "resumed_from": 8, "w": 12.0}
    newest = find_newest_local(str(tmp_path / "checkpoints"), StepNameFormat(None, None))
    assert newest is not None and newest.step == 10  # what the sensor and the Assets see
