"""``[jax] max_log_streams``: a triggerer holds at most that many pod log streams open; a log
past it waits its turn in order, and a job that ends first shows its last lines."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

import pytest

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.triggers.watch.stream_slots import StreamSlots, stream_slots
from harness.jobsets import manifest, trigger_for
from harness.k8s_emulator import PodRun, PodScript
from tests.support.trigger_runs import events


async def test_slots_pass_in_order_and_a_waiter_that_leaves_holds_none():
    slots, closing = StreamSlots(1), asyncio.Event()
    assert await slots.take(closing)
    second = asyncio.create_task(slots.take(closing))
    third = asyncio.create_task(slots.take(closing))
    await asyncio.sleep(0)  # both in line
    assert (slots.held, slots.waiting) == (1, 2)
    slots.give()
    assert await second and not third.done()  # first in line, first served
    third.cancel()
    await asyncio.gather(third, return_exceptions=True)
    assert (slots.held, slots.waiting) == (1, 0)
    slots.give()
    assert slots.held == 0


async def test_a_waiter_handed_a_slot_as_it_is_cancelled_passes_it_on():
    slots, closing = StreamSlots(1), asyncio.Event()
    assert await slots.take(closing)
    second = asyncio.create_task(slots.take(closing))
    third = asyncio.create_task(slots.take(closing))
    await asyncio.sleep(0)
    slots.give()  # handed to the second...
    second.cancel()  # ...which is cancelled before it runs again
    await asyncio.gather(second, return_exceptions=True)
    assert await third  # the slot went on to the next in line
    assert (slots.held, slots.waiting) == (1, 0)


async def test_closing_ends_the_wait_for_a_slot_and_a_limit_of_0_streams_nothing():
    slots, closing = StreamSlots(0), asyncio.Event()
    waiting = asyncio.create_task(slots.take(closing))
    await asyncio.sleep(0)
    closing.set()
    assert await waiting is False
    assert (slots.held, slots.waiting) == (0, 0)


async def until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Wait for a condition the emulator and the triggers reach on their own."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


@pytest.fixture
def one_stream(monkeypatch):
    monkeypatch.setenv("AIRFLOW__JAX__MAX_LOG_STREAMS", "1")


async def test_past_the_limit_a_log_waits_its_turn_or_shows_its_tail(k8s, capsys, one_stream):
    """Three jobs, one stream: A streams; B gets A's slot when A ends; C ends before its
    turn and shows its last lines, read once."""
    k8s.script(lambda pod: PodScript(logs=[f"line of {pod.jobset}"], message="", duration=math.inf))
    hook = KubernetesCluster().hook()
    names = [f"job-{x}-0123456789" for x in "abc"]
    triggers = [trigger_for(hook.create_jobset(manifest(n)), log_lines=5) for n in names]
    slots = stream_slots()  # this event loop's: the triggers' too
    # One at a time, so the first in line is A's.
    runs = []
    for count, trigger in enumerate(triggers, 1):
        runs.append(asyncio.create_task(events(trigger)))
        await until(lambda c=count: slots.held + slots.waiting == c, f"{count} logs asked for")
    assert (slots.held, slots.waiting) == (1, 2)

    def follows() -> list[str]:
        return [r.path for r in k8s.requests if r.path.endswith("/log") and "follow" in r.query]

    def release(name: str) -> None:
        pods: list[PodRun] = [p for p in k8s.controller.pods.values() if p.jobset == name]
        k8s.call(lambda: [p.released.set() for p in pods])

    assert len(follows()) == 1 and names[0] in follows()[0]
    release(names[0])
    await runs[0]
    await until(lambda: len(follows()) == 2, "B's stream")
    assert names[1] in follows()[1]
    release(names[2])  # C ends while B holds the slot
    await runs[2]
    release(names[1])
    await runs[1]
    assert len(follows()) == 2 and (slots.held, slots.waiting) == (0, 0)
    tails = [r for r in k8s.requests if r.path.endswith("/log") and "tailLines" in r.query]
    assert len(tails) == 1 and names[2] in tails[0].path
    task_log = capsys.readouterr().out
    for name in names:
        assert f"[0/0] line of {name}" in task_log, task_log
    assert "1 pod log streams are open in this triggerer ([jax] max_log_streams)" in task_log
    assert f"The last 1 lines of {names[2]}" in task_log


async def test_a_crowd_of_streams_opens_a_few_at_a_time():
    """A crowd of starts (a triggerer resuming, an API server restart) opens at most
    ``max_opening`` streams at once, each next one as soon as an earlier one is open."""
    slots, closing = StreamSlots(10, max_opening=2), asyncio.Event()
    crowd = [asyncio.create_task(slots.take(closing)) for _ in range(3)]
    await asyncio.sleep(0)
    assert [task.done() for task in crowd] == [True, True, False]
    assert slots.held == 3  # the third holds its slot and waits for its turn to open
    slots.opened()
    assert await crowd[2]
