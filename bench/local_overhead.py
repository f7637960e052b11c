"""Local backend overhead: a 2-process JAX job through the backend vs started by hand.

Both sides run the very same pods: the same manifest, argv and env (``process_env``), with
fresh coordinator ports each run. "By hand" is bare ``subprocess.Popen`` and ``wait``, the
physical limit; the backend adds each pod's init process, log streaming, report parsing,
failure watching and result reading. Runs alternate, after one warm-up of each, and which
side of a pair goes first alternates too. Target: median wall-time ratio <= 1.05, over 25
runs of each. A pair's ratio alone swings from 0.8 to 1.2 on two shared cores, so the median
of 9 moves by some 0.04, the whole margin (the same code read 1.060x over 9 pairs, then
1.003x, 1.028x and 1.032x over 25); the backend's own cost is a few hundredths of a second.
Until the workers waited for the coordinator to listen (``runtime/coordinator.py``), from a
quarter to over half of the starts paid gRPC's first reconnect backoff, about 1 s, on either
side.

Each run's wall time is split by the clock the user's code reads at its first and last line
(``bench/pods/timed_train.py``): start-up before the first line, the user's code, and the
end after its last line. ``bench.startup_parts`` then says what the start-up is made of.

    python -m bench.local_overhead [--reps 25] [--steps 20]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.processes import process_env
from airflow_provider_jax.backends.local.runner import LocalJobSet
from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.runtime.env import TERMINATION_PATH_ENV
from airflow_provider_jax.runtime.messages import parse_message
from bench import startup_parts, timed_jobs
from bench.targets import QUICK, Targets, quick
from bench.timed_jobs import PYTHONPATH, fresh_plans

TARGET = 1.05


@dataclass(frozen=True)
class Run:
    """One run's wall time, split at the user's first and last line."""

    wall: float
    startup: float  # from the first Popen (or the backend's call) to the user's first line
    user: float  # the user's function, first line to last
    end: float  # from its last line until every process has exited and the result is read


def job_manifest(steps: int) -> dict[str, Any]:
    """2 processes x 4 CPU devices."""
    return timed_jobs.job_manifest("bench", parse_tpu("tpu-v5litepod-8", chips_per_host=4), steps)


def by_hand(manifest: dict[str, Any]) -> Run:
    plans = fresh_plans(manifest)
    scratch = [tempfile.mkdtemp(prefix="bench-") for _ in plans]
    envs = [process_env(plan, tmp, PYTHONPATH) for plan, tmp in zip(plans, scratch, strict=True)]
    started = time.time()
    processes = [
        subprocess.Popen(
            plan.argv,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for plan, env in zip(plans, envs, strict=True)
    ]
    codes = [p.wait() for p in processes]
    message = Path(envs[0][TERMINATION_PATH_ENV]).read_text()  # where the leader was told
    ended = time.time()
    for tmp in scratch:
        shutil.rmtree(tmp, ignore_errors=True)
    if any(codes):
        raise RuntimeError(f"a process failed: exit codes {codes}")
    return split(started, ended, parse_message(message))


def through_backend(manifest: dict[str, Any], log: logging.Logger) -> Run:
    started = time.time()
    message, _ = LocalJobSet(manifest, log=log, pythonpath=PYTHONPATH).run()
    return split(started, time.time(), message)  # the leader's message, parsed as it is read


def split(started: float, ended: float, message: dict[str, Any] | None) -> Run:
    body = message or {}
    result = body.get("result") or {}
    if not body.get("ok") or result.get("processes") != 2:
        raise RuntimeError(f"the job did not return the leader's 2-process result: {message!r}")
    first, last = result["first_line"], result["last_line"]
    return Run(ended - started, first - started, last - first, ended - last)


def median_run(runs: list[Run]) -> Run:
    return Run(*(statistics.median(getattr(r, f.name) for r in runs) for f in fields(Run)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=quick(25, 1))
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
        rows = []
        for rep in range(args.reps):
            # In turn which goes first: the second of a pair starts as the first's two
            # interpreters are still giving back their memory.
            if rep % 2:
                backend, hand = through_backend(manifest, log), by_hand(manifest)
            else:
                hand, backend = by_hand(manifest), through_backend(manifest, log)
            rows.append((hand, backend))

    print(f"2 processes x 4 CPU devices, quickstart_train({args.steps} steps), {args.reps} reps")
    print("seconds: wall = start-up (to the user's first line) + user code + end (to the result)")
    header = f"{'wall':>7} {'start':>6} {'user':>6} {'end':>6}"
    print(f"{'rep':>4}  by hand: {header}   backend: {header}   ratio")
    for i, (hand, backend) in enumerate(rows, 1):
        print(
            f"{i:>4}  {'':>9}{cells(hand)}   {'':>9}{cells(backend)}   {backend.wall / hand.wall:.3f}"
        )
    hand, backend = median_run([r[0] for r in rows]), median_run([r[1] for r in rows])
    ratio = backend.wall / hand.wall
    print(f"{'med':>4}  {'':>9}{cells(hand)}   {'':>9}{cells(backend)}   {ratio:.3f}")
    print(
        f"the backend's overhead, medians: {backend.wall - hand.wall:+.3f} s in all; "
        f"start-up {backend.startup - hand.startup:+.3f} s, user code "
        f"{backend.user - hand.user:+.3f} s, end {backend.end - hand.end:+.3f} s"
    )
    startup_parts.report(
        lambda: fresh_plans(manifest), PYTHONPATH, hand.startup, reps=min(args.reps, 9)
    )
    targets = Targets()
    targets.at_most("median wall-time ratio, backend / by hand", ratio, TARGET, "x")
    targets.exit()


def cells(run: Run) -> str:
    return f"{run.wall:>7.3f} {run.startup:>6.3f} {run.user:>6.3f} {run.end:>6.3f}"


if __name__ == "__main__":
    main()
