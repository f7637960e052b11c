"""The quickstart's training, timed (``bench/pods/timed_train.py``), as a JobSet and its pods
planned the way the local backend plans them. Shared by ``bench.local_overhead`` and
``bench.local_gpu``; it imports nothing of Airflow, so a GPU machine without it runs both."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.devices import AUTO, CPU, place, visible_gpus
from airflow_provider_jax.backends.local.localize import free_ports, localize
from airflow_provider_jax.backends.local.pods import PodPlan, plan_pods
from airflow_provider_jax.backends.local.processes import PodProcess
from airflow_provider_jax.manifest.accelerators import parse_gpu
from airflow_provider_jax.manifest.accelerators.model import Accelerator
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.pod_command import python_call
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.runtime.messages import parse_message

HERE = Path(__file__).resolve().parent
PYTHONPATH = [str(HERE.parent / "dags"), str(HERE / "pods")]  # quickstart_train, bench/pods


def job_manifest(name: str, accelerator: Accelerator, steps: int) -> dict[str, Any]:
    """The JobSet that runs ``timed_train.train(steps)`` on ``accelerator``."""
    return pod_manifest(name, accelerator, "timed_train:train", {"steps": steps})


def pod_manifest(
    name: str,
    accelerator: Accelerator,
    entrypoint: str,
    kwargs: dict[str, Any],
    diagnostics: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JobSet that runs ``entrypoint(**kwargs)`` (from ``PYTHONPATH``) on ``accelerator``,
    with the operator's ``diagnostics`` call options (``profile_steps``, ...) if given."""
    argv, env = python_call(entrypoint=entrypoint, kwargs=kwargs, diagnostics=diagnostics)
    spec = JaxJobSpec(
        name=name, accelerator=accelerator, image="ignored-locally", command=argv, env=env
    )
    return build_jobset(spec)


def one_process_bench(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, bool, str]:
    """``parser``'s arguments with ``--cpu`` added, whether the bench's one process runs on
    this machine's GPU (where it has one and ``--cpu`` is not given), and "GPU" or "CPU"."""
    parser.add_argument("--cpu", action="store_true", help="the CPU even where a GPU is seen")
    args = parser.parse_args()
    on_gpu = bool(visible_gpus(os.environ)) and not args.cpu
    return args, on_gpu, "GPU" if on_gpu else "CPU"


ONE_GPU = parse_gpu("h100", gpus_per_node=1, num_nodes=1)  # one process, one device


def fresh_plans(manifest: dict[str, Any]) -> list[PodPlan]:
    """The pods, with fresh coordinator ports: the leader (slice 0, host 0) first."""
    plans = plan_pods(localize(manifest, *free_ports(2)))
    return sorted(plans, key=lambda p: (p.slice_index, p.host_index))


def through_backend(manifest: dict[str, Any], on_gpus: bool) -> tuple[float, dict[str, Any]]:
    """The backend's process layer: each pod under its init, its lines read, its message."""
    plans = fresh_plans(manifest)
    placement = place(plans, AUTO if on_gpus else CPU, os.environ)
    started = time.time()
    processes = [PodProcess.start(p, lambda *_: None, PYTHONPATH, placement.of(p)) for p in plans]
    codes = [p.wait() for p in processes]
    for process in processes:
        process.close()
    wall = time.time() - started
    if any(codes):
        raise RuntimeError(f"a process failed through the backend: exit codes {codes}")
    return wall, result_of(processes[0].termination_message())


def result_of(message: str | None) -> dict[str, Any]:
    """The leader's result, from its termination message."""
    body = parse_message(message) or {}
    if not body.get("ok"):
        raise RuntimeError(f"the leader left no result: {message!r}")
    return body["result"]
