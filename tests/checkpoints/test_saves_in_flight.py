"""Real Orbax saves caught while they are written: no search ever reports the step before
Orbax finalized it.

``tests/fixtures/programs/async_save.py`` saves one large step with an async
``CheckpointManager``, in both of Orbax's atomicity modes: ``CommitFileTemporaryPath`` (as
Flax's gemma example configures it: written straight into ``<dir>/<step>/``, the marker last)
and the local default, ``AtomicRenameTemporaryPath``. The test stops the saving process with
SIGSTOP as soon as the step's folder appears, so the save is caught mid-write whatever the
machine's speed; every reader is asked then (the sensor's poke, the trigger's async search,
the event trigger's step stream, and the pods' ``resumed_from`` search), and again once the
process was let go and finished.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_jax.checkpoints import (
    COMMIT_SUCCESS_FILE,
    CheckpointQuery,
    afind_newest_finalized,
    find_newest_finalized,
)
from airflow_provider_jax.checkpoints.stream import CheckpointDirStream
from airflow_provider_jax.runtime.orbax_steps import StepRules
from airflow_provider_jax.runtime.stores import store_for
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from harness.gcs_emulator import GcsEmulator
from tests.support.waiting import eventually

PROGRAM = Path(__file__).parents[1] / "fixtures" / "programs" / "async_save.py"
STEP = 5


def _start_save(directory: str, mode: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(PROGRAM), directory, str(STEP), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # SIGSTOP reaches tensorstore's threads and any child
    )


def _every_reader(query: CheckpointQuery) -> dict[str, object]:
    """What each reader of the provider answers now: a step number, or None."""

    async def triggers() -> tuple[int | None, int | None]:
        found = await afind_newest_finalized(query)
        listings = CheckpointDirStream(query, poll_interval=0.01).listings()
        try:
            first = await (await anext(listings)).first_finalized_after(-1)
        finally:
            await listings.aclose()
        return found and found.step, first and first.step

    sensor = OrbaxCheckpointSensor(
        task_id="wait", checkpoint_dir=query.checkpoint_dir, poke_interval=0.1, timeout=5
    )
    poked = sensor.poke({})
    answers: dict[str, object] = {
        "sensor": poked.xcom_value["step"] if poked.is_done else None,
        "sync": (found := find_newest_finalized(query)) and found.step,
    }
    answers["async"], answers["stream"] = asyncio.run(triggers())
    where = query.location  # the pods' search, as resumed_from makes it
    found = store_for(where).newest_step(where, StepRules())
    answers["resumed_from"] = found and found.step
    return answers


def _caught_mid_write(save: subprocess.Popen[bytes], started: callable, marker: callable) -> None:
    eventually("the step's folder to appear", lambda: started() or save.poll() is not None, 120)
    os.killpg(save.pid, signal.SIGSTOP)
    assert save.poll() is None and not marker(), (
        "the save finished before it could be caught; make the saved state larger"
    )


def _let_go(save: subprocess.Popen[bytes]) -> None:
    os.killpg(save.pid, signal.SIGCONT)
    output, _ = save.communicate(timeout=300)
    assert save.returncode == 0, output.decode()


@pytest.mark.parametrize("mode", ["commit_file", "atomic_rename"])
def test_a_local_step_being_written_is_never_reported(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "checkpoints"
    step_dir = root / str(STEP)
    query = CheckpointQuery(str(root))
    save = _start_save(str(root), mode)
    try:
        if mode == "commit_file":
            started = step_dir.is_dir  # written in place
        else:
            started = lambda: any(root.glob(f"{STEP}.orbax-checkpoint-tmp*"))  # noqa: E731
        _caught_mid_write(save, started, (step_dir / COMMIT_SUCCESS_FILE).exists)

        assert set(_every_reader(query).values()) == {None}
    finally:
        _let_go(save)

    assert (step_dir / COMMIT_SUCCESS_FILE).exists()
    assert set(_every_reader(query).values()) == {STEP}


def test_a_gcs_step_being_written_is_never_reported(
    gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    root = f"gs://{gcs_bucket}/run/checkpoints"
    location = CheckpointQuery(root).location
    step_prefix = f"{location.prefix}{STEP}/"
    query = CheckpointQuery(root)

    def names() -> list[str]:
        return gcs_emulator.object_names(gcs_bucket)

    save = _start_save(root, "commit_file")  # GCS's default mode in Orbax
    try:
        _caught_mid_write(
            save,
            lambda: any(name.startswith(step_prefix) for name in names()),
            lambda: step_prefix + COMMIT_SUCCESS_FILE in names(),
        )

        assert set(_every_reader(query).values()) == {None}
    finally:
        _let_go(save)

    assert step_prefix + COMMIT_SUCCESS_FILE in names()
    assert set(_every_reader(query).values()) == {STEP}
