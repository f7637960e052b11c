"""Progress lines: the rate, the ETA and the pacing that keeps a fast loop's log short."""

from __future__ import annotations

import pytest

from airflow_provider_jax.reporting.progress import Progress, eta_text, kubelet_time, rate_text


def test_a_run_with_a_total_shows_percentage_rate_and_eta():
    progress = Progress()
    assert progress.line({"step": 0, "total_steps": 10_000, "loss": 1.0}, 100.0) == (
        "step 0/10000 (0%): loss=1"
    )
    # 1200 steps in 400 s: 3 steps/s, 8800 steps left: 49 minutes.
    line = progress.line({"step": 1200, "total_steps": 10_000, "loss": 0.5}, 500.0)
    assert line == "step 1200/10000 (12%) · 3.0 steps/s · ETA 49m: loss=0.5"


def test_reports_are_paced_but_each_tenth_and_the_last_one_show():
    progress = Progress(every=10)
    shown = [
        line
        for step in range(0, 101)
        if (line := progress.line({"step": step, "total_steps": 100}, step * 0.5)) is not None
    ]
    # 101 reports over 50 s: one per 10 s of the job's clock, plus each new tenth.
    assert 10 <= len(shown) <= 16, shown
    assert shown[-1].startswith("step 100/100 (100%)")
    assert progress.flush() is None  # the last one was shown


def test_without_a_total_the_held_back_report_shows_when_the_log_ends():
    progress = Progress(every=10)
    assert progress.line({"step": 1, "loss": 0.9}, 0.0) == "step 1: loss=0.9"
    assert progress.line({"step": 2, "loss": 0.8}, 1.0) is None
    assert progress.line({"step": 3, "loss": 0.7}, 2.0) is None
    assert progress.flush() == "step 3 · 1.0 steps/s: loss=0.7"
    assert progress.flush() is None


def test_the_rate_forgets_a_slow_start_and_a_restart():
    progress = Progress(every=0, window=60)
    progress.line({"step": 0, "total_steps": 1000}, 0.0)
    progress.line({"step": 10, "total_steps": 1000}, 100.0)  # a slow first compile
    line = progress.line({"step": 610, "total_steps": 1000}, 160.0)
    assert "10 steps/s · ETA 39s" in line  # the last minute only
    line = progress.line({"step": 500, "total_steps": 1000}, 170.0)  # resumed from a checkpoint
    assert line == "step 500/1000 (50%)"  # no rate until the restart has one of its own


def test_reports_without_a_step_pass_through():
    assert Progress().line({"phase": "eval", "acc": 0.5}, 0.0) == "phase=eval acc=0.5"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0s"), (45, "45s"), (2820, "47m"), (3600 * 3 + 720, "3h12m"), (86400 * 2.2, "2d4h")],
)
def test_eta_text(seconds, text):
    assert eta_text(seconds) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [(1234.5, "1234 steps/s"), (3.14, "3.1 steps/s"), (0.25, "0.25 steps/s"), (0.025, "40 s/step")],
)
def test_rate_text(rate, text):
    assert rate_text(rate) == text


def test_kubelet_time():
    assert kubelet_time("2026-11-24T06:00:01.500000000Z") == pytest.approx(1795500001.5)
    assert kubelet_time("not a time") is None
