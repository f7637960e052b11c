"""The trigger's checkpoint-freshness look on the event loop: fed by the run clock as the
leader's log feeds it, over a real (local) checkpoint directory, it warns once."""

from __future__ import annotations

import asyncio
import logging

from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.reporting.checkpoint_freshness import FreshnessAlarm
from airflow_provider_jax.triggers.watch.checkpoint_freshness import CheckpointFreshness
from airflow_provider_jax.triggers.watch.run_clock import RunClock

LOG = logging.getLogger("tests.freshness")
JOBSET = {"metadata": {"creationTimestamp": None}, "spec": {"replicatedJobs": []}}


def test_a_run_without_a_new_checkpoint_is_warned_about_once(tmp_path, caplog):
    options = WatchOptions(
        checkpoint_warn_after=0.4,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        hosts=8,
        checkpoints_expected=True,  # an asset: known to checkpoint before its first step
    )
    clock = RunClock()
    clock.seen(JOBSET)

    async def scenario() -> None:
        look = CheckpointFreshness(options, clock, LOG, "google_cloud_default")
        for step in range(12):
            clock.leader_line(0, "", "", {"step": step})
            await asyncio.sleep(0.1)
        await look.stop()

    with caplog.at_level(logging.WARNING, LOG.name):
        asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1, said
    assert said[0].startswith("No new finalized checkpoint for 0 s of work (none yet)")
    assert "on each of 8 hosts" in said[0]


def test_a_job_not_known_to_checkpoint_stays_quiet_until_it_does():
    alarm = FreshnessAlarm(warn_after=60, hosts=4)
    assert alarm.due(now=1000, work_began=0, last_step=900) is None  # never checkpointed
    alarm.found(100, at=200)
    assert alarm.due(now=250, work_began=0, last_step=950) is None  # 50 s old
    line = alarm.due(now=500, work_began=0, last_step=990)
    assert line is not None and "for 5 min of work (the newest is step 100)" in line
    assert "(20 min of host time)" in line
    assert "raise checkpoint_warn_after (now 1 min)" in line
    assert alarm.due(now=900, work_began=0, last_step=999) is None  # once
