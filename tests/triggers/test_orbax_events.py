"""OrbaxCheckpointEventTrigger: parse-time checks, serialization, and real Orbax saves watched
through Airflow's own shared-stream manager, as the triggerer drives it (ack mode)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.module_loading import import_string

from airflow_provider_jax.checkpoints.stream import OWNER_KEY_PREFIX, cursor_key
from airflow_provider_jax.triggers import orbax_events
from airflow_provider_jax.triggers.orbax_events import OrbaxCheckpointEventTrigger
from harness.event_triggerer import AssetStore, EventTriggerer, WatchedAssets
from harness.gcs_emulator import GcsEmulator
from tests.support.orbax_saves import save_steps

WAIT = 20


@pytest.fixture(autouse=True)
def _quick_takeover(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is in flight from an earlier owner here; the running-Airflow test keeps 5 s."""
    monkeypatch.setattr(orbax_events, "TAKEOVER_SETTLE_SECONDS", 0.1)


def watcher(directory: str, store: AssetStore | None = None, **kwargs: Any):
    trigger = OrbaxCheckpointEventTrigger(checkpoint_dir=directory, poll_interval=0.2, **kwargs)
    trigger.asset_state_store = WatchedAssets([store] if store else [])
    return trigger


def test_serialize_round_trips_and_watchers_of_one_directory_share_a_stream() -> None:
    trigger = OrbaxCheckpointEventTrigger(
        checkpoint_dir="gs://bkt/runs/llm", min_step=100, step_prefix="ckpt", poll_interval=30
    )
    classpath, kwargs = trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert import_string(classpath)(**kwargs).serialize() == (classpath, kwargs)
    other = OrbaxCheckpointEventTrigger(
        checkpoint_dir="gs://bkt/runs/llm", min_step=0, step_prefix="ckpt", poll_interval=30
    )
    assert other.shared_stream_key() == trigger.shared_stream_key()  # min_step is per watcher


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"checkpoint_dir": "runs/llm"}, "is relative"),
        ({"checkpoint_dir": "s3://b/x"}, "only GCS"),
        ({"checkpoint_dir": "/x", "min_step": -1}, "min_step must be an int >= 0"),
        ({"checkpoint_dir": "/x", "poll_interval": 0}, "poll_interval must be seconds > 0"),
        ({"checkpoint_dir": "/x", "step_format_fixed_length": 0}, "positive int"),
    ],
)
def test_bad_arguments_fail_at_parse(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OrbaxCheckpointEventTrigger(**kwargs)


async def _until(check: Any) -> None:
    async with asyncio.timeout(WAIT):
        while not check():
            await asyncio.sleep(0.05)


async def test_steps_fire_oldest_first_and_the_cursor_moves_only_once_stored(
    tmp_path: Path,
) -> None:
    directory = str(tmp_path / "ckpts")
    save_steps(directory, [10, 20])
    # Never finalized: a temporary directory, and a step without its commit marker.
    (tmp_path / "ckpts" / "30.orbax-checkpoint-tmp-7" / "default").mkdir(parents=True)
    (tmp_path / "ckpts" / "40" / "default").mkdir(parents=True)
    store, triggerer = AssetStore(), EventTriggerer()
    key = cursor_key(directory)

    events = triggerer.events(1, watcher(directory, store))
    first = await asyncio.wait_for(anext(events), WAIT)
    assert first.payload["step"] == 10 and first.payload["path"] == f"{directory}/10"
    second = asyncio.ensure_future(anext(events))
    await asyncio.sleep(1)  # five polls: nothing is committed while Airflow has not stored it
    assert key not in store.values
    triggerer.persist()
    await _until(lambda: store.values.get(key, {}).get("step") == 10)
    assert (await asyncio.wait_for(second, WAIT)).payload["step"] == 20
    third = asyncio.ensure_future(anext(events))  # the triggerer asks on at once
    triggerer.persist()
    await _until(lambda: store.values[key]["step"] == 20)
    await asyncio.sleep(1)
    assert not third.done()  # 30 and 40 are not finalized
    third.cancel()
    await asyncio.gather(third, return_exceptions=True)
    await events.aclose()


async def test_a_restarted_watcher_goes_on_after_the_stored_cursor(tmp_path: Path) -> None:
    directory = str(tmp_path / "ckpts")
    save_steps(directory, [10, 20, 30])
    store = AssetStore()
    await store.aset(cursor_key(directory), {"step": 20, "path": f"{directory}/20"})
    triggerer = EventTriggerer()
    events = triggerer.events(1, watcher(directory, store))
    assert (await asyncio.wait_for(anext(events), WAIT)).payload["step"] == 30
    await events.aclose()


async def test_watchers_of_one_bucket_share_one_listing_per_poll(
    gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    directory = f"gs://{gcs_bucket}/run/ckpts"
    save_steps(directory, [10, 20])
    gcs_emulator.clear_requests()
    triggerer = EventTriggerer()
    stores = [AssetStore() for _ in range(3)]
    streams = [triggerer.events(i, watcher(directory, s)) for i, s in enumerate(stores)]
    firsts = await asyncio.wait_for(asyncio.gather(*(anext(s) for s in streams)), WAIT)
    assert [e.payload["step"] for e in firsts] == [10, 10, 10]
    listed = gcs_emulator.list_requests(gcs_bucket)
    roots = [r for r in listed if r.param("prefix") == "run/ckpts/"]
    assert len(roots) == 1  # one listing for three watchers
    assert len(listed) == 2  # and one look at step 10
    for stream in streams:
        await stream.aclose()


async def test_a_watcher_another_triggerer_took_over_stops_announcing(tmp_path: Path) -> None:
    """A triggerer thought dead that is not: the newer watcher owns the directory."""
    directory = str(tmp_path / "ckpts")
    save_steps(directory, [10])
    store = AssetStore()
    old_triggerer, new_triggerer = EventTriggerer(), EventTriggerer()
    old = old_triggerer.events(1, watcher(directory, store))
    assert (await asyncio.wait_for(anext(old), WAIT)).payload["step"] == 10
    stalled = asyncio.ensure_future(anext(old))
    old_triggerer.persist()
    await _until(lambda: store.values.get(cursor_key(directory), {}).get("step") == 10)
    new = new_triggerer.events(2, watcher(directory, store))
    pending_new = asyncio.ensure_future(anext(new))
    await asyncio.sleep(0.5)  # the new one claimed the directory
    save_steps(directory, [20])
    assert (await asyncio.wait_for(pending_new, WAIT)).payload["step"] == 20
    await asyncio.sleep(1)
    assert not stalled.done()  # the old one saw step 20 too, and stayed quiet
    stalled.cancel()
    await asyncio.gather(stalled, return_exceptions=True)
    await old.aclose()
    await new.aclose()


@pytest.mark.parametrize("late", ["claim", "previous release's token"])
async def test_an_overwritten_owner_takes_the_directory_back_from_a_silent_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late: str
) -> None:
    """A cancelled copy's claim landed after the kept copy's (its triggerer stalled mid-claim),
    or a bare token is left from before an upgrade: nobody refreshes that record, so the kept
    copy takes the directory back after the lease instead of staying quiet forever."""
    monkeypatch.setenv("AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD", "1")
    monkeypatch.setattr(orbax_events, "TAKEOVER_SETTLE_SECONDS", 0.5)
    directory = str(tmp_path / "ckpts")
    save_steps(directory, [10])
    store, owner = AssetStore(), cursor_key(directory, OWNER_KEY_PREFIX)
    kept = EventTriggerer().events(2, watcher(directory, store))
    pending = asyncio.ensure_future(anext(kept))
    await _until(lambda: owner in store.values)
    mine = store.values[owner]["token"]
    overwritten = time.monotonic()
    stale = {"token": "1/cancelled", "at": time.time()} if late == "claim" else "1/old"
    await store.aset(owner, stale)
    event = await asyncio.wait_for(pending, WAIT)
    assert event.payload["step"] == 10
    assert store.values[owner]["token"] == mine
    if late == "claim":  # silent for the lease: 1 s threshold + 2 polls + 0.5 s settling
        assert time.monotonic() - overwritten >= 1.9
    await kept.aclose()


async def test_a_step_check_that_keeps_failing_waits_for_the_next_poll(
    gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    """A 503 on one step's check, past its retries, is "not this poll", as a failed listing
    is: the watcher goes on and announces the step once storage answers."""
    directory = f"gs://{gcs_bucket}/run/ckpts"
    save_steps(directory, [10])
    gcs_emulator.clear_requests()  # count only the watcher's
    gcs_emulator.fail_next(503, times=5, matches=lambda r: r.param("prefix") == "run/ckpts/10/")
    events = EventTriggerer(autopersist=True).events(1, watcher(directory, AssetStore()))
    assert (await asyncio.wait_for(anext(events), 60)).payload["step"] == 10
    failed = [
        r for r in gcs_emulator.list_requests(gcs_bucket) if r.param("prefix") == "run/ckpts/10/"
    ]
    assert len(failed) == 6  # five refused within one check, then the next poll's
    await events.aclose()
