"""The checkpoint-freshness warning on the local backend: a multi-host job whose newest
finalized Orbax step (a real one) grows old warns once, with what a failure would cost."""

from __future__ import annotations

import logging

from tests.support.local_runs import run

PROGRAMS = "tests.support.inspection_programs"
HOSTS = "tpu-v5litepod-16"  # four hosts


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_an_old_checkpoint_is_warned_about_once(tmp_path, caplog):
    steps, _ = run(
        f"{PROGRAMS}:saves_once_then_trains",
        accelerator=HOSTS,
        output_dir=str(tmp_path),
        initialize_distributed=False,
        checkpoint_warn_after=1.0,
        entrypoint_kwargs={"seconds": 4.0},
    )
    said = [w for w in warnings(caplog) if "No new finalized checkpoint" in w]
    assert steps > 2 and len(said) == 1, warnings(caplog)
    assert "(the newest is step 1); the leader has reported step" in said[0]
    assert "on each of 4 hosts" in said[0] and "of host time" in said[0]


def test_no_warning_when_turned_off(tmp_path, caplog):
    run(
        f"{PROGRAMS}:saves_once_then_trains",
        accelerator=HOSTS,
        output_dir=str(tmp_path),
        initialize_distributed=False,
        checkpoint_warn_after=None,
        entrypoint_kwargs={"seconds": 2.0},
    )
    assert not [w for w in warnings(caplog) if "checkpoint" in w]
