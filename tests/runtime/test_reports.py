"""The reporter's promises: calls never wait for the device, lines keep their order, a report
superseded by one of the same metrics within the interval is left out, others never are, and
bad values are refused at the call."""

from __future__ import annotations

import itertools
import threading
import time
import types
from typing import Any

import pytest

from airflow_provider_jax.runtime import reports
from airflow_provider_jax.runtime.reports import Reporter


class SlowScalar:
    """A device value as JAX hands it out: ready once ``done`` is set."""

    shape, size = (), 1

    def __init__(self, value: float, done: threading.Event) -> None:
        self.value, self.done, self.awaited = value, done, threading.Event()

    @property
    def dtype(self) -> Any:
        return type("dtype", (), {"kind": "f"})()

    def copy_to_host_async(self) -> None:
        self.awaited.set()

    def block_until_ready(self) -> SlowScalar:
        assert threading.current_thread().name != "airflow-jax-reports", "it must poll"
        self.done.wait()  # the next report's call keeps pace with this one
        return self

    def is_ready(self) -> bool:
        return self.done.is_set()

    def item(self) -> float:
        assert self.done.is_set(), "read before the device finished"
        return self.value


def test_a_call_never_waits_for_the_device_and_its_line_comes_once_ready():
    printed: list[dict] = []
    reporter = Reporter(printed.append)
    done = threading.Event()
    started = time.monotonic()
    reporter.submit({"step": 1, "loss": SlowScalar(0.5, done)})
    assert time.monotonic() - started < 0.05
    assert not reporter.flush(timeout=0.2) and printed == []
    done.set()
    assert reporter.flush(timeout=5)
    assert printed == [{"step": 1, "loss": 0.5}]


class HeldPipe:
    """An emit whose first line blocks until ``open`` is set, as a full pipe would: the
    thread is busy with it while the calls go on."""

    def __init__(self) -> None:
        self.printed: list[dict] = []
        self.open, self.holding = threading.Event(), threading.Event()

    def __call__(self, body: dict) -> None:
        if not self.printed:
            self.holding.set()
            self.open.wait()
        self.printed.append(body)


def test_superseded_reports_are_left_out_but_order_and_other_metrics_are_kept():
    pipe = HeldPipe()
    reporter = Reporter(pipe, interval=60)
    reporter.submit({"step": 1, "loss": 1.0})
    assert pipe.holding.wait(5)  # the thread holds it: the next ones queue behind it
    for step in range(2, 6):
        reporter.submit({"step": step, "loss": float(step)})
    reporter.submit({"step": 5, "eval_loss": 0.1})
    reporter.submit({"step": 6, "loss": 6.0})
    reporter.submit({"step": 7, "loss": 7.0})
    pipe.open.set()
    assert reporter.flush(timeout=5)
    assert pipe.printed == [
        {"step": 1, "loss": 1.0},
        {"step": 5, "loss": 5.0},
        {"step": 5, "eval_loss": 0.1},
        {"step": 7, "loss": 7.0},
    ]


def test_the_first_report_is_printed_even_when_the_next_come_before_the_thread_runs(
    monkeypatch,
):
    """docs/runtime.md's loop reports steps 0, 10 and 20 before the printing thread has
    started: the first is printed all the same, then the last (the one between is
    superseded)."""
    late: list[threading.Thread] = []

    class LateThread(threading.Thread):
        def start(self) -> None:  # as a busy machine schedules it: after the calls
            late.append(self)

    fake = types.SimpleNamespace(
        Thread=LateThread, Condition=threading.Condition, Lock=threading.Lock
    )
    monkeypatch.setattr(reports, "threading", fake)
    printed: list[dict] = []
    reporter = Reporter(printed.append, interval=60)
    for step, loss in ((0, 0.1), (10, 0.2), (20, 0.3)):
        reporter.submit({"step": step, "loss": loss})
    (thread,) = late
    threading.Thread.start(thread)
    assert reporter.flush(timeout=5)
    assert printed == [{"step": 0, "loss": 0.1}, {"step": 20, "loss": 0.3}]


def test_the_loop_keeps_pace_one_report_behind_the_device():
    printed: list[dict] = []
    reporter = Reporter(printed.append)
    done = threading.Event()
    reporter.submit({"step": 1, "loss": SlowScalar(1.0, done)})  # returns at once
    waited = threading.Thread(target=reporter.submit, args=({"step": 2, "loss": 2.0},))
    waited.start()
    waited.join(0.2)
    assert waited.is_alive()  # the next call waits for the previous report's value
    done.set()
    waited.join(5)
    assert reporter.flush(timeout=5)
    assert printed[-1] == {"step": 2, "loss": 2.0}


def test_one_line_every_interval_at_most():
    printed: list[tuple[float, dict]] = []
    reporter = Reporter(lambda body: printed.append((time.monotonic(), body)), interval=0.2)
    until = time.monotonic() + 1.0
    step = 0
    while time.monotonic() < until:
        step += 1
        reporter.submit({"step": step})
        time.sleep(0.001)
    reporter.flush()
    times = [t for t, _ in printed[:-1]]  # flush() prints the last without waiting
    assert 3 <= len(printed) <= 8
    assert all(b - a >= 0.19 for a, b in itertools.pairwise(times))
    assert printed[-1][1] == {"step": step}  # the last is always printed


def test_a_report_in_each_tenth_of_the_run_is_kept():
    pipe = HeldPipe()
    reporter = Reporter(pipe, interval=60)
    reporter.submit({"step": 0, "total_steps": 60, "loss": 0.0})
    assert pipe.holding.wait(5)
    for step in range(1, 61):
        reporter.submit({"step": step, "total_steps": 60, "loss": float(step)})
    pipe.open.set()
    assert reporter.flush(timeout=5)
    assert [body["step"] for body in pipe.printed] == [0, 5, 11, 17, 23, 29, 35, 41, 47, 53, 59, 60]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1.0], "must be a number or a string, got list"),
        (1j, "must be a number or a string, got complex"),
    ],
)
def test_bad_values_are_refused_at_the_call(value, message):
    reporter = Reporter(lambda body: None)
    with pytest.raises(TypeError, match=message):
        reporter.submit({"loss": value})


def test_a_device_array_that_is_no_scalar_is_refused_at_the_call_without_reading_it():
    jnp = pytest.importorskip("jax.numpy")
    reporter = Reporter(lambda body: None)
    with pytest.raises(TypeError, match=r"report\(loss=...\) must be a scalar, got .* \(3,\)"):
        reporter.submit({"loss": jnp.ones(3)})
    with pytest.raises(TypeError, match="got complex"):
        reporter.submit({"loss": jnp.array(1j)})
