"""A lost slice: waiting for it (as a job does today) against ``min_slices=1`` (#65).

The job: 2 slices x 2 hosts (``tpu-v5litepod-8``, four real JAX processes on the CPU) training
``dags/elastic_train.py`` (a global batch held constant, Orbax checkpoints every 10 steps,
parameters resharded onto the mesh of each size), run by the local backend through
``airflow dags test``, so the operator's own loop makes each new JobSet. A step is about 0.1 s
of "compute" on 2 slices and twice that on one (the same rows over half the devices).

Once the job reports step 20, slice 1's capacity goes (``[jax] local_capacity_file``: its
processes are killed and do not start again) for a fixed outage, then comes back. The same
outage, both ways; each run is stopped at the same deadline after the loss (SIGTERM, as a
worker is stopped). From process 0's own step times (``bench/pods/elastic_steps.py``):

- steps: the newest step reached by the deadline (the same step 20 before the loss);
- idle slice-seconds: slices held (with capacity, and asked for by the job) while no step
  ran, from the loss to the deadline;
- goodput: the steps gained after the loss, at the 2-slice step time, over the time from the
  loss to the deadline;
- redone: the most steps run again after a restart (the checkpoint interval at most);
- restart: from the end of the last step before a restart to the first step after it, less
  any wait for capacity (the outage must be at least 5 times the longest).

    python -m bench.elastic
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.targets import Targets, quick

ROOT = Path(__file__).resolve().parent.parent
LOSE_AT = 20
OUTAGE_S = quick(60.0, 12.0)
TAIL_S = quick(20.0, 6.0)  # from the capacity's return to the deadline
CHECKPOINT_EVERY = 10
SHRINK_AFTER_S = 2.0
TARGET_STEPS = 1.5  # min_slices' steps over waiting's, by the deadline
MODES = {"waiting": "bench_elastic_wait", "min_slices": "bench_elastic_min_slices"}


def airflow_home(work: Path) -> dict[str, str]:
    """The env of an ``airflow`` command on a fresh SQLite home, migrated."""
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "bench" / "dags"),
        "AIRFLOW__JAX__RESUME_SETTLE_SECONDS": "0",
        "PYTHONPATH": str(ROOT),
        "BENCH_ELASTIC_OUT": str(work),
        "BENCH_ELASTIC_DEADLINE": str(LOSE_AT + OUTAGE_S + TAIL_S + 120),  # a backstop
    }
    migrate = [sys.executable, "-m", "airflow", "db", "migrate"]
    subprocess.run(migrate, env=env, check=True, capture_output=True)
    return env


def run_once(env: dict[str, str], mode: str, work: Path) -> dict[str, Any]:
    """One job with slice 1's capacity lost for ``OUTAGE_S``: its step times and moves."""
    dag_id = MODES[mode]
    capacity = work / f"{mode}-capacity.json"
    set_capacity(capacity, 2)
    steps_file = work / dag_id / "steps.jsonl"
    log = (work / f"{mode}.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "airflow", "dags", "test", dag_id, "2024-01-01"],
        env={**env, "AIRFLOW__JAX__LOCAL_CAPACITY_FILE": str(capacity)},
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(proc, lambda: newest(steps_file) >= LOSE_AT, "step 20")
        lost = time.time()
        set_capacity(capacity, 1)
        wait_for(proc, lambda: time.time() >= lost + OUTAGE_S, "the outage's end")
        back = time.time()
        set_capacity(capacity, 2)
        wait_for(proc, lambda: time.time() >= back + TAIL_S, "the deadline")
        deadline = time.time()
    finally:
        proc.terminate()  # the task's on_kill stops its processes
        proc.wait(timeout=120)
        log.close()
    marks = [json.loads(line) for line in steps_file.read_text().splitlines()]
    return measure(marks, lost, back, deadline)


def set_capacity(path: Path, slices: int) -> None:
    staged = path.with_suffix(".new")
    staged.write_text(json.dumps({"slices": slices}))
    os.replace(staged, path)


def newest(steps_file: Path) -> int:
    try:
        lines = steps_file.read_text().splitlines()
    except FileNotFoundError:
        return -1
    return max((json.loads(line)["step"] for line in lines if line.endswith("}")), default=-1)


def wait_for(proc: subprocess.Popen[bytes], done: Any, what: str) -> None:
    while not done():
        if proc.poll() is not None:
            raise RuntimeError(f"the job ended before {what} (exit {proc.returncode})")
        time.sleep(0.05)


def measure(
    marks: list[dict[str, Any]], lost: float, back: float, deadline: float
) -> dict[str, Any]:
    marks = [m for m in marks if m["t"] <= deadline]
    before = [m for m in marks if m["t"] < lost]
    step_s = statistics.median(b["t"] - a["t"] for a, b in itertools.pairwise(before))
    at_loss = max(m["step"] for m in before)
    reached = max(m["step"] for m in marks)
    idle = redone = 0.0
    restarts: list[float] = []
    after = [m for m in marks if m["t"] >= lost]
    previous = before[-1]
    for mark in after:
        gap = mark["t"] - previous["t"]
        if gap > 1.0:  # no step ran: a restart, or a wait for capacity
            idle += held(previous["t"], mark["t"], mark["slices"], lost, back)
            redone = max(redone, previous["step"] - mark["step"] + 1)
            waited = max(min(back, mark["t"]) - max(lost, previous["t"]), 0.0)
            if mark["slices"] == 1 or mark["t"] < back:  # capacity was there: a shrink
                waited = 0.0
            restarts.append(gap - waited - (SHRINK_AFTER_S if mark["slices"] == 1 else 0.0))
        previous = mark
    window = deadline - lost
    return {
        "steps": reached,
        "steps after the loss": reached - at_loss,
        "idle slice-seconds": idle,
        "goodput": (reached - at_loss) * step_s / window,
        "steps redone": redone,
        "restart": max(restarts, default=0.0),
        "step time": step_s,
        "sizes": sorted({m["slices"] for m in after}),
    }


def held(start: float, end: float, slices: int, lost: float, back: float) -> float:
    """Slice-seconds held from ``start`` to ``end`` by a job of ``slices``: one fewer while
    slice 1 had no capacity."""
    outage = max(min(end, back) - max(start, lost), 0.0)
    return slices * (end - start) - (1 if slices > 1 else 0) * outage


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-elastic-"))
    env = airflow_home(work)
    runs = {mode: run_once(env, mode, work) for mode in MODES}
    report(runs)


def report(runs: dict[str, dict[str, Any]]) -> None:
    print(
        f"a 2-slice job loses slice 1 at step {LOSE_AT} for {OUTAGE_S:g} s; deadline "
        f"{TAIL_S:g} s after it returns ({OUTAGE_S + TAIL_S:g} s after the loss)"
    )
    print(f"  {'':<24}{'waiting':>12}{'min_slices=1':>14}")
    rows = ["steps", "steps after the loss", "idle slice-seconds", "goodput", "steps redone",
            "restart", "step time"]  # fmt: skip
    for row in rows:
        w, e = runs["waiting"][row], runs["min_slices"][row]
        print(f"  {row:<24}{w:>12.3g}{e:>14.3g}")
    print(f"  sizes after the loss: waiting {runs['waiting']['sizes']}, "
          f"min_slices {runs['min_slices']['sizes']}")  # fmt: skip
    targets = Targets()
    restart = max(r["restart"] for r in runs.values())
    targets.at_least("outage / the longest restart", OUTAGE_S / restart, 5.0)
    ratio = runs["min_slices"]["steps"] / max(runs["waiting"]["steps"], 1)
    targets.at_least("min_slices / waiting, steps by the deadline", ratio, TARGET_STEPS)
    for mode, run in runs.items():
        targets.at_most(f"{mode}: steps redone after a restart", run["steps redone"],
                        CHECKPOINT_EVERY)  # fmt: skip
    targets.exit()


if __name__ == "__main__":
    main()
