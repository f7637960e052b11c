"""OrbaxCheckpointTrigger: serialization, and real polling while Orbax saves land."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.module_loading import import_string
from airflow.triggers.base import TriggerEvent

from airflow_provider_jax.triggers.orbax import OrbaxCheckpointTrigger
from harness.gcs_emulator import GcsEmulator
from tests.support.orbax_saves import MULTI_ITEM_PREFIXED_PADDED, save_steps

EVENT_TIMEOUT = 30


async def _first_event(trigger: OrbaxCheckpointTrigger) -> TriggerEvent:
    return await asyncio.wait_for(anext(trigger.run()), EVENT_TIMEOUT)


def test_serialize_holds_plain_data_and_round_trips() -> None:
    trigger = OrbaxCheckpointTrigger(
        checkpoint_dir="gs://bkt/runs/llm",
        min_step=10_000,
        step_prefix="ckpt",
        step_format_fixed_length=6,
        gcp_conn_id="gcp_training",
        poll_interval=30,
    )

    classpath, kwargs = trigger.serialize()

    assert classpath == "airflow_provider_jax.triggers.orbax.OrbaxCheckpointTrigger"
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert kwargs == {
        "checkpoint_dir": "gs://bkt/runs/llm",
        "min_step": 10_000,
        "step_prefix": "ckpt",
        "step_format_fixed_length": 6,
        "gcp_conn_id": "gcp_training",
        "allow_legacy_atomic_rename": False,
        "poll_interval": 30.0,
    }
    assert import_string(classpath)(**kwargs).serialize() == (classpath, kwargs)


def test_a_row_stored_by_release_0_1_still_loads() -> None:
    """0.1 called the interval ``poke_interval``, as the sensor does; its rows resume."""
    stored = {
        "checkpoint_dir": "gs://bkt/runs/llm",
        "min_step": 10_000,
        "step_prefix": None,
        "step_format_fixed_length": None,
        "gcp_conn_id": "google_cloud_default",
        "poke_interval": 30.0,
    }
    trigger = OrbaxCheckpointTrigger(**stored)
    assert trigger.poll_interval == 30.0
    resaved = {k: v for k, v in stored.items() if k != "poke_interval"}
    assert trigger.serialize()[1] == {
        **resaved,
        "allow_legacy_atomic_rename": False,  # what 0.1 did for a directory with markers
        "poll_interval": 30.0,
    }


def _root_listings(emulator: GcsEmulator, bucket: str) -> list[Any]:
    return [r for r in emulator.list_requests(bucket) if r.param("prefix") == "runs/llm/"]


@pytest.mark.parametrize("storage", ["gcs", "local"])
async def test_waits_for_min_step_then_fires_once_when_the_save_lands(
    storage: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    layout = MULTI_ITEM_PREFIXED_PADDED
    if storage == "gcs":
        emulator: GcsEmulator = request.getfixturevalue("gcs_emulator")
        bucket = request.getfixturevalue("gcs_bucket")
        root = f"gs://{bucket}/runs/llm"
    else:
        root = str(tmp_path / "runs" / "llm")
    await asyncio.to_thread(save_steps, root, [1, 2], layout)
    if storage == "gcs":
        emulator.clear_requests()
    trigger = OrbaxCheckpointTrigger(
        checkpoint_dir=root, min_step=3, poll_interval=0.1, **layout.sensor_kwargs
    )
    events = trigger.run()
    first = asyncio.ensure_future(anext(events))

    if storage == "gcs":  # it really polls: three looks at the root, and no event
        async with asyncio.timeout(EVENT_TIMEOUT):
            while len(_root_listings(emulator, bucket)) < 3:
                await asyncio.sleep(0.05)
    else:
        await asyncio.sleep(0.6)
    assert not first.done()  # steps 1 and 2 are finalized, but below min_step

    # The save lands while the trigger keeps polling (and sees its partial states).
    await asyncio.to_thread(save_steps, root, [3, 4], layout)
    event = await asyncio.wait_for(first, EVENT_TIMEOUT)

    payload: dict[str, Any] = event.payload
    assert payload["status"] == "success"
    assert payload["checkpoint"]["step"] in (3, 4)
    assert (
        payload["checkpoint"]["path"] == f"{root}/{layout.step_name(payload['checkpoint']['step'])}"
    )
    with pytest.raises(StopAsyncIteration):
        await anext(events)  # exactly one event


async def test_missing_bucket_is_an_error_event(gcs_emulator: GcsEmulator) -> None:
    trigger = OrbaxCheckpointTrigger(checkpoint_dir="gs://no-such-bucket/run", poll_interval=60)

    event = await _first_event(trigger)

    assert event.payload["status"] == "error"
    assert "bucket 'no-such-bucket' does not exist" in event.payload["message"]


async def test_forbidden_is_an_error_event(gcs_emulator: GcsEmulator, gcs_bucket: str) -> None:
    gcs_emulator.fail_next(403, times=10)
    trigger = OrbaxCheckpointTrigger(checkpoint_dir=f"gs://{gcs_bucket}/run", poll_interval=60)

    event = await _first_event(trigger)

    assert event.payload["status"] == "error"
    assert "HTTP 403" in event.payload["message"]
    assert len(gcs_emulator.list_requests(gcs_bucket)) == 1


async def test_transient_errors_are_retried_within_a_check(
    gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    root = f"gs://{gcs_bucket}/run"
    await asyncio.to_thread(save_steps, root, [7])
    gcs_emulator.clear_requests()
    gcs_emulator.fail_next(503, times=1, matches=lambda r: r.is_list)
    gcs_emulator.fail_next(429, times=1, matches=lambda r: r.param("prefix") == "run/7/")
    trigger = OrbaxCheckpointTrigger(checkpoint_dir=root, poll_interval=60)

    event = await _first_event(trigger)

    assert event.payload["status"] == "success"
    assert event.payload["checkpoint"]["step"] == 7
    prefixes = [r.param("prefix") for r in gcs_emulator.list_requests(gcs_bucket)]
    assert prefixes == ["run/", "run/", "run/7/", "run/7/"]
