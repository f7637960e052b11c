"""Local backend overhead: a 2-process JAX job through the backend vs started by hand.

Both sides run the very same pods: the same manifest, argv and env (``process_env``), with
fresh coordinator ports each run. "By hand" is bare ``subprocess.Popen`` and ``wait``; the
backend adds log streaming, report parsing, failure watching and result reading. Runs
alternate, after one warm-up of each. Target: median ratio <= 1.15.

    python -m bench.local_overhead [--reps 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.localize import free_ports, localize
from airflow_provider_jax.backends.local.pods import plan_pods
from airflow_provider_jax.backends.local.processes import process_env
from airflow_provider_jax.backends.local.runner import LocalJobSet
from airflow_provider_jax.jobset.accelerators import parse_tpu
from airflow_provider_jax.jobset.build import build_jobset
from airflow_provider_jax.jobset.pod_command import python_call
from airflow_provider_jax.jobset.spec import JaxJobSpec
from bench.targets import QUICK, Targets, quick

DAGS = str(Path(__file__).resolve().parents[1] / "dags")
TARGET = 1.15


def job_manifest(steps: int) -> dict[str, Any]:
    argv, env = python_call(entrypoint="quickstart_train:train", kwargs={"steps": steps})
    spec = JaxJobSpec(
        name="bench",
        accelerator=parse_tpu("tpu-v5litepod-8", chips_per_host=4),  # 2 processes x 4 devices
        image="ignored-locally",
        command=argv,
        env=env,
    )
    return build_jobset(spec)


def by_hand(manifest: dict[str, Any]) -> float:
    plans = plan_pods(localize(manifest, *free_ports(2)))
    scratch = [tempfile.mkdtemp(prefix="bench-") for _ in plans]
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            plan.argv,
            env=process_env(plan, tmp, [DAGS]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for plan, tmp in zip(plans, scratch, strict=True)
    ]
    codes = [p.wait() for p in processes]
    elapsed = time.perf_counter() - started
    for tmp in scratch:
        shutil.rmtree(tmp, ignore_errors=True)
    if any(codes):
        raise RuntimeError(f"a process failed: exit codes {codes}")
    return elapsed


def through_backend(manifest: dict[str, Any], log: logging.Logger) -> float:
    started = time.perf_counter()
    message, _ = LocalJobSet(manifest, log=log, pythonpath=[DAGS]).run()
    elapsed = time.perf_counter() - started
    body = message or {}  # the leader's termination message, parsed (as the backend reads it)
    if not body.get("ok") or body.get("result", {}).get("processes") != 2:
        raise RuntimeError(f"the job did not return the leader's 2-process result: {message!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=quick(5, 1))
    parser.add_argument("--steps", type=int, default=quick(20, 5))
    args = parser.parse_args()

    manifest = job_manifest(args.steps)
    with tempfile.NamedTemporaryFile(prefix="bench-task-", suffix=".log") as task_log:
        # Like a task log: every line goes to a file.
        log = logging.getLogger("bench.local_overhead")
        log.propagate = False
        log.setLevel(logging.INFO)
        log.addHandler(logging.FileHandler(task_log.name))

        if not QUICK:
            by_hand(manifest), through_backend(manifest, log)  # warm-up
        rows = [(by_hand(manifest), through_backend(manifest, log)) for _ in range(args.reps)]

    print(f"2 processes x 4 CPU devices, quickstart_train({args.steps} steps), {args.reps} reps")
    print(f"{'rep':>4} {'by hand (s)':>12} {'backend (s)':>12} {'ratio':>7}")
    for i, (hand, backend) in enumerate(rows, 1):
        print(f"{i:>4} {hand:>12.3f} {backend:>12.3f} {backend / hand:>7.3f}")
    hand_median = statistics.median(r[0] for r in rows)
    backend_median = statistics.median(r[1] for r in rows)
    ratio = backend_median / hand_median
    print(f"{'med':>4} {hand_median:>12.3f} {backend_median:>12.3f} {ratio:>7.3f}")
    targets = Targets()
    targets.at_most("median wall-time ratio, backend / by hand", ratio, TARGET, "x")
    targets.exit()


if __name__ == "__main__":
    main()
