"""Storage requests of ``OrbaxCheckpointEventTrigger`` watchers on one bucket.

A run of 1,000 finalized steps sits in an in-process GCS emulator that pages like GCS. 1, 10
and 100 watchers of that directory (one per asset, each already caught up) run through
Airflow's own ``SharedStreamManager`` in ack mode, as the triggerer runs them, with a short
poll interval; every ``objects.list`` that reaches the emulator is counted. Scenarios:

* nothing new: a poll is the directory listing;
* a step being written: it is checked once per poll, for all watchers;
* a new step finalized: each watcher announces it (one event each), from one check.

Requests per minute are scaled to the default ``poll_interval=60``. Run from the repository
root::

    python -m bench.checkpoint_watchers [--steps 1000] [--polls 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from typing import Any

from bench.emulated_gcs import bench_airflow_home, emulated_gcs
from bench.targets import Targets, quick

BUCKET = "bench-watch"
RUN = "runs/llm/checkpoints"
POLL = 0.2  # seconds, in the bench; requests are per poll, so they scale to any interval
DEFAULT_POLL = 60.0
TARGET_PER_POLL = 2  # nothing new: at most two requests per poll for the whole directory


def _step(step: int, finalized: bool = True) -> list[tuple[str, bytes]]:
    base = f"{RUN}/{step}"
    names = [f"{base}/_CHECKPOINT_METADATA", f"{base}/default/ocdbt.process_0/d/0"]
    return [(n, b"x") for n in [*names, *([f"{base}/commit_success.txt"] if finalized else [])]]


async def _watch(emulator: Any, watchers: int, polls: int, steps: int, change: Any) -> dict:
    from airflow_provider_jax.checkpoints.stream import cursor_key
    from airflow_provider_jax.triggers import orbax_events
    from airflow_provider_jax.triggers.orbax_events import OrbaxCheckpointEventTrigger
    from harness.event_triggerer import AssetStore, EventTriggerer, WatchedAssets

    orbax_events.TAKEOVER_SETTLE_SECONDS = 0.0  # no earlier owner here
    directory = f"gs://{BUCKET}/{RUN}"
    triggerer = EventTriggerer(autopersist=True)
    events: list[int] = []

    async def consume(i: int) -> None:
        store = AssetStore()
        await store.aset(cursor_key(directory), {"step": steps, "path": f"{directory}/{steps}"})
        trigger = OrbaxCheckpointEventTrigger(checkpoint_dir=directory, poll_interval=POLL)
        trigger.asset_state_store = WatchedAssets([store])
        async for event in triggerer.events(i, trigger):
            events.append(event.payload["step"])

    tasks = [asyncio.ensure_future(consume(i)) for i in range(watchers)]
    await asyncio.sleep(3 * POLL)  # every watcher subscribed, the first listing done
    change()
    emulator.clear_requests()
    await asyncio.sleep(polls * POLL)
    requests = [r for r in emulator.requests if r.bucket == BUCKET and r.is_list]
    # Polls done: the directory listings that started one (a listing may take two pages).
    polls_done = sum(r.param("prefix") == f"{RUN}/" and not r.param("pageToken") for r in requests)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return {"lists": len(requests), "polls": max(polls_done, 1), "events": len(events)}


def run_bench(steps: int, polls: int) -> list[tuple[str, int, float, float, int]]:
    rows = []
    with emulated_gcs() as emulator:
        for watchers in (1, 10, 100):
            emulator.reset()
            emulator.create_bucket(BUCKET)
            for step in range(1, steps + 1):
                emulator.put_objects(BUCKET, _step(step))
            scenarios = [
                ("nothing new", lambda: None),
                (
                    "a step being written",
                    lambda: emulator.put_objects(BUCKET, _step(steps + 1, False)),
                ),
            ]
            for scenario, change in scenarios:
                got = asyncio.run(_watch(emulator, watchers, polls, steps, change))
                per_poll = got["lists"] / got["polls"]
                rows.append(
                    (
                        scenario,
                        watchers,
                        per_poll,
                        per_poll * 60 / DEFAULT_POLL / watchers,
                        got["events"],
                    )
                )
            emulator.put_objects(BUCKET, [(f"{RUN}/{steps + 1}/commit_success.txt", b"x")])
            got = asyncio.run(_watch(emulator, watchers, polls, steps, lambda: None))
            per_poll = got["lists"] / got["polls"]
            rows.append(("a new step finalized", watchers, per_poll, 0.0, got["events"]))
            emulator.drop_bucket(BUCKET)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=quick(1000, 20))
    parser.add_argument("--polls", type=int, default=quick(10, 1))
    args = parser.parse_args(argv)
    bench_airflow_home()
    logging.disable(logging.WARNING)  # each watcher's lines are not the point here

    rows = run_bench(args.steps, args.polls)
    print(f"{args.steps} finalized steps under gs://{BUCKET}/{RUN}/, {args.polls} polls each")
    print()
    print(
        "| scenario | watchers | objects.list per poll | per watcher per minute (60 s poll) | events |"
    )
    print("|---|---:|---:|---:|---:|")
    for scenario, watchers, per_poll, per_watcher, events in rows:
        shown = f"{per_watcher:.3f}" if per_watcher else "-"
        print(f"| {scenario} | {watchers} | {per_poll:.1f} | {shown} | {events} |")
    print("\nWithout a shared listing, each watcher would list the directory on every poll.")
    targets = Targets()
    for _, watchers, per_poll, _, _ in (r for r in rows if r[0] == "nothing new"):
        what = f"nothing new, {watchers} watcher(s): objects.list per poll"
        targets.at_most(what, per_poll, TARGET_PER_POLL)
    targets.exit()


if __name__ == "__main__":
    main()
