"""The ETA held against deadlines: each told once, when the predicted finish passes it, with
the callback called as Airflow calls a deadline's (its kwargs and a ``context``)."""

from __future__ import annotations

import logging

from airflow_provider_jax.reporting.deadlines import Deadline, DeadlineWatch
from airflow_provider_jax.reporting.progress import Progress

T0 = 1_800_000_000.0
CALLED: list[dict] = []


def called(**kwargs) -> None:
    CALLED.append(kwargs)


async def called_async(**kwargs) -> None:
    CALLED.append({"async": True, **kwargs})


def progress(*steps: tuple[float, int], total: int | None = 1000) -> Progress:
    p = Progress()
    for at, step in steps:
        p.line({"step": step, **({"total_steps": total} if total else {})}, T0 + at)
    return p


def test_the_finish_is_the_newest_report_plus_the_steps_left_at_the_rate():
    assert progress((0, 100), (10, 200)).finish_at() == T0 + 10 + 800 / 10
    assert progress((0, 100)).finish_at() is None  # no rate from one report
    assert progress((0, 100), (10, 200), total=None).finish_at() is None  # no total, no ETA


def test_each_deadline_is_told_once_when_the_finish_passes_it(caplog):
    late, far = (
        Deadline(T0 + 60, "a", f"{__name__}.called", {"k": 1}, "late"),
        Deadline(T0 + 10_000, "b", f"{__name__}.called", name="far"),
    )
    watch, log = DeadlineWatch([far, late]), logging.getLogger("t")
    with caplog.at_level(logging.WARNING):
        (call,) = watch.check(progress((0, 100), (10, 200)), log, T0 + 10)  # finish: T0 + 90
        assert watch.check(progress((0, 100), (20, 300)), log, T0 + 20) == []  # told already
    assert "past deadline 'late'" in caplog.text and "'far'" not in caplog.text
    CALLED.clear()
    call()
    (kwargs,) = CALLED
    assert kwargs["k"] == 1 and kwargs["context"]["deadline"]["step"] == 200


def test_an_async_callback_runs_to_its_end_and_a_failing_one_is_logged(caplog):
    CALLED.clear()
    Deadline(T0, "a", f"{__name__}.called_async").run_callback(T0 + 5, 1, 10)
    assert CALLED[0]["async"] is True
    (call,) = DeadlineWatch([Deadline(T0, "a", f"{__name__}.missing")]).check(
        progress((0, 1), (1, 2)), logging.getLogger("t"), T0 + 1
    )
    with caplog.at_level(logging.ERROR):
        call()  # raises nothing: the wait on the job goes on
    assert f"The deadline callback {__name__}.missing failed" in caplog.text
