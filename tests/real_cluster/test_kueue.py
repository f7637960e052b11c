"""Real Kueue in front of the real JobSet controller: a job waiting on quota shows Kueue's own
message and its position (Kueue's visibility API, through the API server's aggregator); it
is admitted when quota frees; and a higher-priority job preempts a running one."""

from __future__ import annotations

from tests.support.real_cluster_jobs import gated, logger


def test_a_job_waits_on_quota_with_kueues_message_and_position_then_runs(
    queues, real_k8s, tmp_path
):
    first_log, first_lines = logger("first")
    first, first_out = gated("first", tmp_path / "first-gate", first_log)
    first_lines.wait_for("Queue: admitted by Kueue")
    second_log, second_lines = logger("second")
    second, second_out = gated("second", tmp_path / "second-gate", second_log)
    # Kueue's own words, as it writes them on the Workload's QuotaReserved condition.
    second_lines.wait_for(
        "Queue: waiting: couldn't assign flavors to pod set slice: insufficient unused quota "
        "for google.com/tpu in flavor tpu-v5e, 8 more needed"
    )
    second_lines.wait_for("position 1 in queue tpu-queue")  # first in line (1-based)
    (tmp_path / "first-gate").touch()
    first.join(60)
    assert first_out["value"].result["processes"] == 2
    second_lines.wait_for("Queue: admitted by Kueue")
    (tmp_path / "second-gate").touch()
    second.join(60)
    assert second_out["value"].result["gate"] == str(tmp_path / "second-gate")


def test_a_higher_priority_job_preempts_a_running_one(queues, real_k8s, tmp_path):
    low_log, low_lines = logger("low")
    low, low_out = gated("low", tmp_path / "low-gate", low_log, "low")
    low_lines.wait_for("Queue: admitted by Kueue")
    high_log, high_lines = logger("high")
    high, high_out = gated("high", tmp_path / "high-gate", high_log, "high")
    low_lines.wait_for("evicted by Kueue")
    high_lines.wait_for("Queue: admitted by Kueue")
    (tmp_path / "high-gate").touch()
    high.join(60)
    assert high_out["value"].result["processes"] == 2
    low_lines.wait_for("Queue: admitted by Kueue", timeout=60)  # readmitted once quota frees
    (tmp_path / "low-gate").touch()
    low.join(90)
    assert low_out["value"].result["processes"] == 2, low_out
