"""Storage requests to find the newest finalized Orbax step: our search vs Airflow's prefix sensor.

Builds a run of 1,000 steps x 50 objects in an in-process GCS emulator that pages like GCS
(1,000 entries per ``objects.list`` page), then counts the HTTP requests that reach it for

* our search, through ``GCSHook`` (``poke``) and ``GCSAsyncHook`` (the trigger);
* ``GCSObjectsWithPrefixExistenceSensor(prefix="<run>/")``, one ``poke`` over the same prefix.

Every request that reaches the emulator for the bucket is counted. The prefix sensor answers an easier question (is there any object?) and still has to page
through every object, while it cannot tell a finalized step from a half-written one.

Objects go straight into the emulator's store: 50,000 uploads would take many minutes, since the
stock emulator rewrites its whole index on every upload. Run from the repository root::

    python -m bench.orbax_requests [--steps 1000] [--files-per-step 50]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.emulated_gcs import bench_airflow_home, emulated_gcs
from bench.targets import Targets, quick

BUCKET = "bench-ckpt"
RUN = "runs/llm"
TARGET_REQUESTS = 3


@dataclass(frozen=True)
class Row:
    scenario: str
    method: str
    requests: int
    lists: int
    result: str
    seconds: float


def _step_objects(step: int, files_per_step: int) -> list[tuple[str, bytes]]:
    """One step shaped like an Orbax save: metadata, two items' files, the marker last."""
    base = f"{RUN}/{step}"
    names = [f"{base}/_CHECKPOINT_METADATA", f"{base}/commit_success.txt"]
    for i in range(files_per_step - len(names)):
        item = "params" if i % 2 else "opt_state"
        names.append(f"{base}/{item}/ocdbt.process_0/d/{i:08x}")
    return [(name, b"x") for name in names]


def _measure(
    emulator: Any,
    scenario: str,
    method: str,
    run: Callable[[], Any],
    describe: Callable[[Any], str],
) -> Row:
    emulator.clear_requests()
    started = time.perf_counter()
    outcome = run()
    seconds = time.perf_counter() - started
    time.sleep(0.5)  # let the client's background requests land before counting
    requests = [r for r in emulator.requests if r.bucket == BUCKET]
    lists = sum(r.is_list for r in requests)
    return Row(scenario, method, len(requests), lists, describe(outcome), seconds)


def run_bench(steps: int, files_per_step: int) -> list[Row]:
    from airflow.providers.google.cloud.sensors.gcs import GCSObjectsWithPrefixExistenceSensor

    from airflow_provider_jax.checkpoints import (
        CheckpointQuery,
        afind_newest_finalized,
        find_newest_finalized,
    )

    with emulated_gcs() as emulator:
        emulator.create_bucket(BUCKET)
        for step in range(1, steps + 1):
            emulator.put_objects(BUCKET, _step_objects(step, files_per_step))
        total = len(emulator.object_names(BUCKET))

        query = CheckpointQuery(f"gs://{BUCKET}/{RUN}")
        prefix_sensor = GCSObjectsWithPrefixExistenceSensor(
            task_id="prefix_sensor", bucket=BUCKET, prefix=f"{RUN}/"
        )
        scenarios = [
            ("newest step finalized", 0),
            ("newest step being written", 1),
            ("newest 2 steps unfinalized", 2),
        ]
        rows = []
        for scenario, unfinalized in scenarios:
            # Each scenario takes the marker off one more of the newest steps.
            for step in range(steps - unfinalized + 1, steps + 1):
                marker = f"{RUN}/{step}/commit_success.txt"
                if marker in emulator.storage.objects[BUCKET]:
                    emulator.delete_objects(BUCKET, [marker])

            def step_of(found: Any) -> str:
                return f"step {found.step}" if found else "none"

            rows.append(
                _measure(
                    emulator,
                    scenario,
                    "OrbaxCheckpointSensor poke (GCSHook)",
                    lambda: find_newest_finalized(query),
                    step_of,
                )
            )
            rows.append(
                _measure(
                    emulator,
                    scenario,
                    "OrbaxCheckpointTrigger (GCSAsyncHook)",
                    lambda: asyncio.run(afind_newest_finalized(query)),
                    step_of,
                )
            )
            rows.append(
                _measure(
                    emulator,
                    scenario,
                    "GCSObjectsWithPrefixExistenceSensor poke",
                    lambda: prefix_sensor.poke({}),
                    lambda done: f"{len(prefix_sensor._matches)} objects, done={done}",
                )
            )
        print(
            f"{steps} steps x {files_per_step} objects = {total} objects under gs://{BUCKET}/{RUN}/"
        )
        return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=quick(1000, 30))
    parser.add_argument("--files-per-step", type=int, default=quick(50, 5))
    args = parser.parse_args(argv)
    bench_airflow_home()

    rows = run_bench(args.steps, args.files_per_step)

    print()
    print("| scenario | method | requests | of which objects.list | result | seconds |")
    print("|---|---|---:|---:|---|---:|")
    for row in rows:
        print(
            f"| {row.scenario} | {row.method} | {row.requests} | {row.lists} | {row.result} "
            f"| {row.seconds:.2f} |"
        )
    print(
        "\nRequests other than objects.list: google-cloud-storage >= 3 fetches bucket metadata"
        " once per new client (GCSHook makes one per poke), in a background thread."
    )
    ours = [r for r in rows if r.scenario == "newest step finalized" and "Orbax" in r.method]
    targets = Targets()
    for row in ours:
        targets.at_most(
            f"newest step finalized, {row.method}: requests", row.requests, TARGET_REQUESTS
        )
    targets.exit()


if __name__ == "__main__":
    main()
