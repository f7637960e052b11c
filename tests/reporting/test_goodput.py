"""The goodput ledger's arithmetic: every second of wall time lands in one bucket."""

from __future__ import annotations

from airflow_provider_jax.reporting.goodput import (
    MAX_STEP_MARKS,
    GoodputClock,
    chips,
    epoch,
    summary_line,
)
from harness.jobsets import manifest


def test_a_disruption_splits_the_failed_attempt_at_the_step_the_next_resumed_from():
    clock = GoodputClock(created=0.0, chips=8)
    clock.begin(0, 10.0)  # queued 10 s
    for step in range(1, 31):
        clock.report(0, step, 20.0 + step)  # step 1 at 21 s, then a step a second
    clock.end(0, 60.0, "disruption")  # step 20 (at 40 s) is the last checkpoint it kept
    clock.begin(1, 70.0)
    clock.resumed(1, 20, 75.0)
    clock.report(1, 21, 80.0)
    clock.end(1, 90.0)
    ledger = clock.ledger(91.0)
    assert ledger == {
        "wall_s": 91.0,
        "queued_s": 10.0,
        "startup_s": 11.0 + 10.0,  # to the first reports (step 1 at 21 s; 80 s)
        "productive_s": 19.0 + 10.0,  # steps 1-20 kept, then the resumed run
        "lost_s": 30.0,  # from step 20's report (40 s) to the restart (70 s)
        "restarts": {"disruption": 1},
        "resumed_from": 20,
        "chips": 8,
        "chip_hours": round(8 * 81 / 3600, 4),
        "goodput": round(29 / 91, 3),
        # The same stretches in order, for the try's trace (metrics/spans.py).
        "phases": [
            {"phase": "queued", "attempt": None, "start": 0.0, "end": 10.0},
            {"phase": "startup", "attempt": 0, "start": 10.0, "end": 21.0},
            {"phase": "productive", "attempt": 0, "start": 21.0, "end": 40.0},
            {"phase": "lost", "attempt": 0, "start": 40.0, "end": 70.0},
            {"phase": "startup", "attempt": 1, "start": 70.0, "end": 80.0},
            {"phase": "productive", "attempt": 1, "start": 80.0, "end": 90.0},
        ],
    }
    assert "1 disruption" in summary_line(ledger) and "resumed from step 20" in summary_line(ledger)


def test_an_attempt_that_saved_nothing_new_loses_all_its_work():
    clock = GoodputClock(created=0.0, chips=4)
    clock.begin(0, 0.0)
    clock.resumed(0, 10, 1.0)
    clock.report(0, 11, 2.0)
    clock.end(0, 9.0, "hang")
    clock.begin(1, 12.0)
    clock.resumed(1, 10, 13.0)  # the same step: attempt 0 kept nothing
    clock.end(1, 20.0)
    ledger = clock.ledger(20.0)
    assert (ledger["lost_s"], ledger["restarts"]) == (10.0, {"hang": 1})


def test_a_program_that_never_reports_starts_its_work_at_its_call():
    clock = GoodputClock(created=0.0, chips=1)
    clock.begin(0, 1.0)
    clock.called(0, 3.0)  # the runtime's start-up took 2 s
    clock.end(0, 5.0)
    ledger = clock.ledger(5.0)
    assert (ledger["startup_s"], ledger["productive_s"], ledger["goodput"]) == (2.0, 2.0, 0.4)
    # It failed and nothing was kept: its work after the call is lost, as a reporter's is.
    failed = GoodputClock(created=0.0, chips=1)
    for attempt, (begun, called, ended, failure) in enumerate(
        [(1.0, 3.0, 5.0, "disruption"), (6.0, 7.0, 9.0, None)]
    ):
        failed.begin(attempt, begun)
        failed.called(attempt, called)
        failed.end(attempt, ended, failure)
    ledger = failed.ledger(9.0)
    assert (ledger["startup_s"], ledger["productive_s"], ledger["lost_s"]) == (3.0, 2.0, 3.0)
    # A report, when there is one, still ends the start-up (compilation, restores).
    reporter = GoodputClock(created=0.0, chips=1)
    reporter.begin(0, 1.0)
    reporter.called(0, 2.0)
    reporter.report(0, 1, 4.0)
    reporter.end(0, 5.0)
    assert reporter.ledger(5.0)["startup_s"] == 3.0


def test_without_a_call_line_or_report_the_time_counts_as_productive_and_no_restart():
    clock = GoodputClock(created=0.0, chips=1)  # a runtime of an older release
    clock.begin(0, 1.0)
    clock.end(0, 5.0)
    assert clock.ledger(5.0)["productive_s"] == 4.0
    failed = GoodputClock(created=0.0, chips=1)
    failed.report(0, 1, 1.0)
    failed.end(0, 3.0, "code error")
    assert failed.ledger(3.0)["restarts"] == {}


def test_step_marks_stay_bounded_and_keep_the_newest():
    clock = GoodputClock(created=0.0, chips=1)
    for step in range(10 * MAX_STEP_MARKS):
        clock.report(0, step, float(step))
    marks = clock.attempts[0].marks
    assert len(marks) <= MAX_STEP_MARKS and marks[-1] == (10 * MAX_STEP_MARKS - 1, marks[-1][1])
    assert clock.attempts[0].reached(12345) <= 12345.0


def test_chips_and_times_come_from_the_api_objects():
    assert chips(manifest(hosts=2)) == 8  # two v5e hosts with four chips each
    assert epoch("2026-11-23T10:00:00.123456789Z") == epoch("2026-11-23T10:00:00.123456Z")
    assert epoch("2026-11-23T10:00:00Z") % 60 == 0
    assert epoch("not a time") is None and epoch(None) is None


def test_an_elastic_job_is_productive_at_its_fraction_and_tells_each_size():
    """2 slices, then 1 while slice 1's capacity is away, then 2 again (min_slices)."""
    clock = GoodputClock(created=0.0, chips=16)
    clock.resize(2, 2)
    clock.begin(0, 0.0)
    clock.report(0, 1, 10.0)
    clock.report(0, 10, 20.0)
    clock.end(0, 30.0, "resize")  # shrunk: the next JobSet resumes from step 10
    clock.resize(1, 2)
    clock.begin(1, 30.0)
    clock.resumed(1, 10, 32.0)
    clock.report(1, 11, 40.0)
    clock.report(1, 20, 60.0)
    clock.end(1, 60.0, "resize")  # grew from step 20
    clock.resize(2, 2)
    clock.begin(2, 60.0)
    clock.resumed(2, 20, 62.0)
    clock.report(2, 21, 70.0)
    clock.end(2, 80.0)
    ledger = clock.ledger(80.0)
    # Work: 10 s at 2 slices (10-20 s), 20 s at 1 (40-60 s: half productive), 10 s at 2.
    assert ledger["productive_s"] == 10.0 + 20.0 / 2 + 10.0
    assert ledger["reduced_s"] == 10.0
    assert ledger["lost_s"] == 10.0  # step 20 at 20 s to the shrink at 30 s
    assert ledger["by_slices"] == {"1": 30.0, "2": 50.0} and ledger["full_slices"] == 2
    assert ledger["restarts"] == {"resize": 2}
    assert ledger["chip_hours"] == round(16 * (80 - 30 / 2) / 3600, 4)  # half the chips for 30 s
    line = summary_line(ledger)
    assert "10.0s without lost slices" in line and "slices: 2/2 for 50.0s, 1/2 for 30.0s" in line


def test_the_ledgers_of_an_elastic_jobs_jobsets_add_up_with_a_resize_between():
    """On Kubernetes each size is its own JobSet, timed by its own trigger."""
    from airflow_provider_jax.reporting.goodput import merged

    first = {"wall_s": 40.0, "queued_s": 5.0, "startup_s": 5.0, "productive_s": 20.0,
             "lost_s": 10.0, "restarts": {"disruption": 1}, "chips": 16, "chip_hours": 0.1,
             "goodput": 0.5, "phases": [{"phase": "queued"}], "by_slices": {"2": 35.0},
             "reduced_s": 0.0, "full_slices": 2, "resumed_from": None}  # fmt: skip
    second = {**first, "wall_s": 60.0, "productive_s": 30.0, "lost_s": 0.0, "restarts": {},
              "by_slices": {"1": 55.0}, "reduced_s": 30.0, "resumed_from": 10}  # fmt: skip
    ledger = merged(first, second)
    assert (ledger["wall_s"], ledger["productive_s"], ledger["reduced_s"]) == (100.0, 50.0, 30.0)
    assert ledger["restarts"] == {"disruption": 1, "resize": 1}
    assert ledger["by_slices"] == {"1": 55.0, "2": 35.0} and ledger["goodput"] == 0.5
    assert ledger["resumed_from"] == 10 and len(ledger["phases"]) == 2
    assert merged(None, second) == second
