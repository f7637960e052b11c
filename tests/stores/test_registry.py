"""A store is its two drivers and one entry on each side: a second store (``mem://``, in
memory, ``tests/support/memory_store.py``), registered by the test and by nothing in the
package, goes through every reader and writer of a location unchanged. The pods write a result,
checkpoint steps and a data set to it; the sensor finds the newest finalized step (poke, the
deferred trigger, the event trigger's stream), the pods' ``resumed_from`` the same, the result
is read back, and the links, lineage and data staging name it through its driver."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from airflow_provider_jax import Data, runtime, stores
from airflow_provider_jax.backends.result import ResultReader, ResultRejected
from airflow_provider_jax.checkpoints import CheckpointQuery
from airflow_provider_jax.checkpoints.stream import CheckpointDirStream
from airflow_provider_jax.links.diagnostics import folder_url, profile_url
from airflow_provider_jax.links.tensorboard import tensorboard_url
from airflow_provider_jax.operators import data_staging
from airflow_provider_jax.operators.lineage import dataset_name
from airflow_provider_jax.runtime import data_paths
from airflow_provider_jax.runtime import stores as runtime_stores
from airflow_provider_jax.runtime.env import OUTPUT_DIR_ENV
from airflow_provider_jax.runtime.output_paths import checkpoints_uri, result_uri
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from airflow_provider_jax.triggers.orbax import OrbaxCheckpointTrigger
from tests.support import memory_store
from tests.support.memory_store import BUCKETS, SCHEME

LOG = logging.getLogger(__name__)
RUN = "mem://bkt/runs/llm"
CHECKPOINTS = checkpoints_uri(RUN)


@pytest.fixture(autouse=True)
def memory(monkeypatch: pytest.MonkeyPatch) -> None:
    memory_store.registered(monkeypatch)


def save(step: int, finalized: bool = True) -> None:
    """A step as Orbax lays it out (an item folder, the marker last), written by the pods'
    driver."""
    runtime_stores.write_text(f"{CHECKPOINTS}/{step}/state/_METADATA", "{}")
    if finalized:
        runtime_stores.write_text(f"{CHECKPOINTS}/{step}/commit_success.txt", "ok")


def test_nothing_in_the_package_names_the_second_store() -> None:
    package = Path(stores.__file__).parents[1]
    assert not [p for p in package.rglob("*.py") if f"{SCHEME}://" in p.read_text()]
    assert runtime_stores.named_store(RUN) is runtime_stores.DRIVERS[SCHEME]


def test_its_locations_are_parsed_by_its_own_rules_and_checked_everywhere() -> None:
    where = runtime_stores.parse_location(RUN, "output_dir")
    assert (where.scheme, where.bucket, where.key, str(where)) == (SCHEME, "bkt", "runs/llm", RUN)
    with pytest.raises(ValueError, match="output_dir 'mem:///x' names no bucket"):
        runtime_stores.parse_location("mem:///x", "output_dir")
    with pytest.raises(ValueError, match="only GCS and memory are supported; use gs://"):
        runtime_stores.parse_location("s3://b/x", "output_dir")
    OrbaxCheckpointSensor(task_id="wait", checkpoint_dir=CHECKPOINTS)  # accepted at parse


def test_the_sensor_finds_the_newest_finalized_step_poked_and_deferred() -> None:
    sensor = OrbaxCheckpointSensor(task_id="wait", checkpoint_dir=CHECKPOINTS, poke_interval=0.01)
    assert not sensor.poke({}).is_done
    for step in (1, 2, 3, 4):  # paged listings: two entries a page
        save(step)
    save(5, finalized=False)  # being written

    poked = sensor.poke({})
    assert poked.is_done and poked.xcom_value["step"] == 4
    assert poked.xcom_value["path"] == f"{CHECKPOINTS}/4"

    trigger = OrbaxCheckpointTrigger(checkpoint_dir=CHECKPOINTS, min_step=3, poll_interval=0.01)
    event = asyncio.run(asyncio.wait_for(anext(trigger.run()), 10))
    assert event.payload["status"] == "success" and event.payload["checkpoint"]["step"] == 4


def test_the_event_triggers_stream_announces_steps_oldest_first() -> None:
    save(1)
    save(2, finalized=False)

    async def first_after(cursor: int) -> int | None:
        listings = CheckpointDirStream(CheckpointQuery(CHECKPOINTS), 0.01).listings()
        try:
            found = await (await anext(listings)).first_finalized_after(cursor)
        finally:
            await listings.aclose()
        return found and found.step

    assert asyncio.run(first_after(-1)) == 1
    assert asyncio.run(first_after(1)) is None


def test_the_pods_resume_from_the_step_the_sensor_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    save(7)
    save(8, finalized=False)
    monkeypatch.setenv(OUTPUT_DIR_ENV, RUN)
    monkeypatch.setattr(runtime, "_resumed", [])  # not asked yet in this process
    assert runtime.resumed_from() == 7


def test_the_leaders_result_is_read_back_within_the_cap() -> None:
    runtime_stores.write_text(result_uri(RUN), json.dumps({"loss": 0.25}))  # as main() does
    message = {"ok": True, "result_uri": result_uri(RUN)}
    assert ResultReader(RUN).from_message(message, LOG) == ({"loss": 0.25}, None)
    with pytest.raises(ResultRejected, match="over the 4-byte cap"):
        ResultReader(RUN, max_bytes=4).from_message(message, LOG)
    assert ResultReader(f"{RUN}/elsewhere").from_message(None, LOG) == (None, None)


def test_links_and_lineage_name_it_through_its_driver() -> None:
    runtime_stores.write_text(f"{RUN}/tb/events.out.tfevents.1.host-0", "")
    template = "https://tb.example.com/?logdir={output_dir}"
    assert tensorboard_url(template, RUN).endswith("logdir=mem%3A%2F%2Fbkt%2Fruns%2Fllm")
    assert tensorboard_url(template, "mem://bkt/runs/other") == ""
    assert folder_url(f"{RUN}/debug") == "memory://bkt/runs/llm/debug/"
    assert profile_url(template, f"{RUN}/profiles").startswith("https://tb.example.com/")
    assert dataset_name(CHECKPOINTS) == ("mem://bkt", "runs/llm/checkpoints")


def test_data_is_read_from_it_and_a_local_folder_is_staged_to_it(tmp_path: Path) -> None:
    runtime_stores.write_text("mem://bkt/ds/part-0.csv", "1,2\n")
    copy = data_paths.resolve({data_paths.MARKER: {"uri": "mem://bkt/ds/", "mount": None}})
    assert (Path(copy) / "part-0.csv").read_text() == "1,2\n"
    with pytest.raises(ValueError, match="GCS FUSE mounts gs:// buckets"):
        Data("mem://bkt/ds/", fuse=True)

    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "shard.csv").write_text("3,4\n")
    local = Data(str(tmp_path / "ds"))
    assert local.on_this_host and not Data("mem://bkt/ds/").on_this_host
    local.staged = data_staging.staging_uri(local, RUN)
    assert local.staged.startswith("mem://bkt/airflow-jax-data/")
    data_staging.upload([local], "google_cloud_default", None, LOG)
    staged = runtime_stores.parse_location(local.staged)
    assert runtime_stores.store_for(staged).list(staged) == ["shard.csv"]
    assert any(key.endswith(".complete") for key in BUCKETS["bkt"])
