"""OrbaxCheckpointSensor in poke and deferrable mode, on real Orbax saves."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import (
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)
from airflow.sdk.module_loading import import_string

import airflow_provider_jax
from airflow_provider_jax.get_provider_info import get_provider_info
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from airflow_provider_jax.triggers.orbax import OrbaxCheckpointTrigger
from harness.gcs_emulator import GcsEmulator
from tests.support.imports import heavy_modules_loaded_by
from tests.support.orbax_saves import MULTI_ITEM_PREFIXED_PADDED, save_steps

REPO_ROOT = Path(airflow_provider_jax.__file__).resolve().parent.parent


def _sensor(checkpoint_dir: str, **kwargs: Any) -> OrbaxCheckpointSensor:
    kwargs = {"poke_interval": 0.1, "timeout": 30, **kwargs}
    return OrbaxCheckpointSensor(
        task_id="wait_for_checkpoint", checkpoint_dir=checkpoint_dir, **kwargs
    )


@pytest.fixture(params=["gcs", "local"])
def checkpoint_root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "gcs":
        return f"gs://{request.getfixturevalue('gcs_bucket')}/runs/llm"
    return str(tmp_path / "runs" / "llm")


# --- parse time and registration ----------------------------------------------------------------


def test_importing_the_sensors_package_loads_no_heavy_libraries() -> None:
    assert heavy_modules_loaded_by("import airflow_provider_jax.sensors") == []
    assert heavy_modules_loaded_by("import airflow_provider_jax.decorators.jax_tpu") == []


def test_provider_info_registers_sensor_and_trigger() -> None:
    info = get_provider_info()
    [sensors] = info["sensors"]
    [triggers] = info["triggers"]
    assert sensors["integration-name"] == triggers["integration-name"] == "JAX"
    assert import_string(f"{sensors['python-modules'][0]}.OrbaxCheckpointSensor") is (
        OrbaxCheckpointSensor
    )
    assert OrbaxCheckpointTrigger.__module__ in triggers["python-modules"]


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="min_step"):
        _sensor("gs://bkt/run", min_step=-1)
    with pytest.raises(ValueError, match="step_format_fixed_length"):
        _sensor("gs://bkt/run", step_format_fixed_length=0)


def test_checkpoint_dir_is_templated() -> None:
    sensor = _sensor("gs://bkt/{{ params.run }}/checkpoints")
    sensor.render_template_fields({"params": {"run": "llm-7b"}})
    assert sensor.checkpoint_dir == "gs://bkt/llm-7b/checkpoints"


def test_deferrable_defaults_to_config(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _sensor("gs://bkt/run").deferrable is False
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
    assert _sensor("gs://bkt/run").deferrable is True
    assert _sensor("gs://bkt/run", deferrable=False).deferrable is False


# --- poke mode ----------------------------------------------------------------------------------


def test_poke_mode_returns_newest_finalized_step(checkpoint_root: str) -> None:
    layout = MULTI_ITEM_PREFIXED_PADDED
    save_steps(checkpoint_root, [100, 200], layout)

    result = _sensor(checkpoint_root, **layout.sensor_kwargs).execute({})

    assert result["step"] == 200
    assert result["path"] == f"{checkpoint_root}/ckpt_000200"
    assert result["finalized_at"].endswith("+00:00")


def test_poke_mode_waits_for_min_step_then_fires(checkpoint_root: str) -> None:
    save_steps(checkpoint_root, [1])
    sensor = _sensor(checkpoint_root, min_step=2)
    results: list[dict[str, Any]] = []
    poking = threading.Thread(target=lambda: results.append(sensor.execute({})))
    poking.start()

    time.sleep(0.5)
    assert poking.is_alive()
    save_steps(checkpoint_root, [2])
    poking.join(timeout=30)

    assert [r["step"] for r in results] == [2]


def test_poke_mode_times_out(tmp_path: Path) -> None:
    with pytest.raises(AirflowSensorTimeout):
        _sensor(str(tmp_path), timeout=0.3).execute({})
    with pytest.raises(AirflowSkipException):
        _sensor(str(tmp_path), timeout=0.3, soft_fail=True).execute({})


def test_poke_mode_fails_at_once_on_missing_bucket(gcs_emulator: GcsEmulator) -> None:
    started = time.monotonic()
    with pytest.raises(AirflowFailException, match="does not exist"):
        _sensor("gs://no-such-bucket/run", timeout=60).execute({})
    assert time.monotonic() - started < 10  # no waiting out the timeout
    assert len(gcs_emulator.list_requests("no-such-bucket")) == 1


def test_poke_mode_fails_at_once_on_forbidden(gcs_emulator: GcsEmulator, gcs_bucket: str) -> None:
    gcs_emulator.fail_next(403, times=100)
    with pytest.raises(AirflowFailException, match="HTTP 403"):
        _sensor(f"gs://{gcs_bucket}/run", timeout=60).execute({})
    with pytest.raises(AirflowSkipException):
        _sensor(f"gs://{gcs_bucket}/run", timeout=60, soft_fail=True).execute({})
    assert len(gcs_emulator.list_requests(gcs_bucket)) == 2


# --- deferrable mode ----------------------------------------------------------------------------


def test_deferrable_returns_at_once_when_already_satisfied(checkpoint_root: str) -> None:
    save_steps(checkpoint_root, [3])

    result = _sensor(checkpoint_root, deferrable=True).execute({})

    assert result["step"] == 3


def test_deferrable_defers_then_returns_the_step_the_trigger_found(checkpoint_root: str) -> None:
    layout = MULTI_ITEM_PREFIXED_PADDED
    save_steps(checkpoint_root, [10], layout)
    sensor = _sensor(
        checkpoint_root, min_step=20, deferrable=True, timeout=600, **layout.sensor_kwargs
    )

    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})

    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout == timedelta(seconds=600)
    classpath, kwargs = deferred.value.trigger.serialize()
    assert kwargs["min_step"] == 20
    assert kwargs["poll_interval"] == sensor.poke_interval
    # The triggerer rebuilds the trigger from its serialized form, then runs it.
    trigger = import_string(classpath)(**kwargs)

    async def run_trigger_while_training_saves() -> dict[str, Any]:
        first = asyncio.ensure_future(anext(trigger.run()))
        await asyncio.sleep(0.3)
        assert not first.done()
        await asyncio.to_thread(save_steps, checkpoint_root, [20], layout)
        return (await asyncio.wait_for(first, 30)).payload

    event = asyncio.run(run_trigger_while_training_saves())
    result = sensor.resume_execution("execute_complete", {"event": event}, {})

    assert result["step"] == 20
    assert result["path"] == f"{checkpoint_root}/ckpt_000020"


@pytest.mark.parametrize("soft_fail", [False, True])
def test_deferrable_error_event_fails_or_skips(soft_fail: bool) -> None:
    sensor = _sensor("gs://bkt/run", deferrable=True, soft_fail=soft_fail)
    event = {"status": "error", "message": "Access denied (HTTP 403) listing gs://bkt/run/"}

    expected = AirflowSkipException if soft_fail else AirflowFailException
    with pytest.raises(expected) as raised:
        sensor.resume_execution("execute_complete", {"event": event}, {})
    assert "HTTP 403" in str(raised.value if not soft_fail else raised.value.__cause__)


def test_deferrable_first_check_error_fails_or_skips(
    gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    gcs_emulator.fail_next(403, times=100)
    with pytest.raises(AirflowFailException, match="HTTP 403"):
        _sensor(f"gs://{gcs_bucket}/run", deferrable=True).execute({})
    with pytest.raises(AirflowSkipException, match="HTTP 403"):
        _sensor(f"gs://{gcs_bucket}/run", deferrable=True, soft_fail=True).execute({})


def test_the_sensor_names_steps_saved_under_another_prefix(checkpoint_root: str, capfd) -> None:
    """Flax and many loops name steps their own way: a poke that finds nothing names the
    folders it saw and the arguments that would match them."""
    layout = MULTI_ITEM_PREFIXED_PADDED
    save_steps(checkpoint_root, [100], layout)
    sensor = _sensor(checkpoint_root)  # no step_prefix, no fixed length
    assert not sensor.poke({}).is_done
    out, err = capfd.readouterr()  # the task's logger writes there outside a task run
    [said] = [line for line in (out + err).splitlines() if "No finalized step" in line]
    assert "'ckpt_000100' look like steps" in said
    assert "step_prefix='ckpt' and step_format_fixed_length=6 would match" in said
    assert (
        sensor.__class__(task_id="again", checkpoint_dir=checkpoint_root, **layout.sensor_kwargs)
        .poke({})
        .is_done
    )


def test_a_folder_nothing_was_saved_in_says_what_writes_it(checkpoint_root: str, capfd) -> None:
    """A training task without output_dir saves nothing: the sensor's log says what it would
    need, rather than "not yet" for seven days."""
    assert not _sensor(checkpoint_root).poke({}).is_done
    out, err = capfd.readouterr()
    [said] = [line for line in (out + err).splitlines() if "No finalized step" in line]
    assert "nothing has been saved there yet" in said
    assert "output_dir=<this folder's parent>" in said


def test_the_trigger_gives_the_same_hint(checkpoint_root: str) -> None:
    from airflow_provider_jax.checkpoints import CheckpointQuery, anaming_hint, naming_hint

    save_steps(checkpoint_root, [3], MULTI_ITEM_PREFIXED_PADDED)
    query = CheckpointQuery(checkpoint_dir=checkpoint_root)
    hint = asyncio.run(anaming_hint(query))
    assert hint == naming_hint(query)
    assert "step_prefix='ckpt'" in hint
    matching = CheckpointQuery(
        checkpoint_dir=checkpoint_root, **MULTI_ITEM_PREFIXED_PADDED.sensor_kwargs
    )
    assert naming_hint(matching) == ""
