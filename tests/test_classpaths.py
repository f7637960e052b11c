"""Every classpath an earlier release may have stored still imports after the layout moved
modules around: a trigger row (``classpath`` and kwargs), an operator extra link in a
serialized DAG, a decorator registered through ``get_provider_info``. A task deferred before an
upgrade resumes only if its trigger's class is still where that row says."""

from __future__ import annotations

import importlib

import pytest
from airflow.sdk.module_loading import import_string

from airflow_provider_jax.get_provider_info import get_provider_info
from airflow_provider_jax.triggers import CLASSPATHS as TRIGGER_CLASSPATHS

# Every trigger class a row of a released version named: a new one joins CLASSPATHS, and the
# ones here never leave it.
RELEASED_TRIGGERS = (
    "airflow_provider_jax.triggers.jobset.JobSetTrigger",
    "airflow_provider_jax.triggers.orbax.OrbaxCheckpointTrigger",
    "airflow_provider_jax.triggers.orbax_events.OrbaxCheckpointEventTrigger",
    "airflow_provider_jax.triggers.orbax_producer.CheckpointDirProducer",
)
STORED = [
    # trigger rows (the triggerer imports ``classpath`` to resume a deferred task)
    *TRIGGER_CLASSPATHS,
    # operator extra links in serialized DAGs
    "airflow_provider_jax.links.jobset.JobSetLogsLink",
    "airflow_provider_jax.links.jobset.JobSetWorkloadLink",
    "airflow_provider_jax.links.jobset.KueueEventsLink",
    "airflow_provider_jax.links.tensorboard.TensorBoardLink",
    # public import paths used in docs/ and dags/
    "airflow_provider_jax.operators.JaxTpuSliceOperator",
    "airflow_provider_jax.operators.JaxGpuJobOperator",
    "airflow_provider_jax.sensors.OrbaxCheckpointSensor",
    "airflow_provider_jax.SecretRef",
    "airflow_provider_jax.secret_refs.SecretRef",  # moved to manifest/; kept for one release
]


def test_no_released_trigger_classpath_leaves_the_list():
    assert set(RELEASED_TRIGGERS) <= set(TRIGGER_CLASSPATHS)


@pytest.mark.parametrize("classpath", STORED)
def test_a_stored_classpath_still_imports(classpath):
    assert import_string(classpath) is not None


def test_triggers_serialize_to_the_classpath_they_were_stored_under():
    from airflow_provider_jax.triggers.jobset import JobSetTrigger
    from airflow_provider_jax.triggers.orbax import OrbaxCheckpointTrigger

    for cls in (JobSetTrigger, OrbaxCheckpointTrigger):
        assert f"{cls.__module__}.{cls.__qualname__}" in STORED


def test_everything_get_provider_info_names_imports():
    info = get_provider_info()
    names = [d["class-name"] for d in info["task-decorators"]]
    names += [f"{m}" for h in info["hooks"] for m in h["python-modules"]]
    names += [m for t in info["triggers"] for m in t["python-modules"]]
    names += [m for o in info["operators"] for m in o["python-modules"]]
    names += [m for s in info["sensors"] for m in s["python-modules"]]
    names += info.get("extra-links", [])
    for name in names:
        try:
            importlib.import_module(name)  # a module path
        except ImportError:
            import_string(name)  # a class path
