"""The quickstart's training, timed (``bench/pods/timed_train.py``), as a JobSet and its pods
planned the way the local backend plans them. Shared by ``bench.local_overhead`` and
``bench.local_gpu``; it imports nothing of Airflow, so a GPU machine without it runs both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.localize import free_ports, localize
from airflow_provider_jax.backends.local.pods import PodPlan, plan_pods
from airflow_provider_jax.manifest.accelerators.model import Accelerator
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.pod_command import python_call
from airflow_provider_jax.manifest.spec import JaxJobSpec

HERE = Path(__file__).resolve().parent
PYTHONPATH = [str(HERE.parent / "dags"), str(HERE / "pods")]  # quickstart_train, timed_train


def job_manifest(name: str, accelerator: Accelerator, steps: int) -> dict[str, Any]:
    """The JobSet that runs ``timed_train.train(steps)`` on ``accelerator``."""
    argv, env = python_call(entrypoint="timed_train:train", kwargs={"steps": steps})
    spec = JaxJobSpec(
        name=name, accelerator=accelerator, image="ignored-locally", command=argv, env=env
    )
    return build_jobset(spec)


def fresh_plans(manifest: dict[str, Any]) -> list[PodPlan]:
    """The pods, with fresh coordinator ports: the leader (slice 0, host 0) first."""
    plans = plan_pods(localize(manifest, *free_ports(2)))
    return sorted(plans, key=lambda p: (p.slice_index, p.host_index))
