"""A lost slice: waiting for it (as a job does today) against ``min_slices=1`` (#65), on real
nodes.

The job: 2 slices x 2 hosts (``tpu-v5litepod-8``, four real JAX processes on the CPU) training
``dags/elastic_train.py`` (a global batch held constant, Orbax checkpoints every 10 steps,
parameters resharded onto the mesh of each size), run by the Kubernetes backend through
``airflow dags test``, so the operator's own loop makes each new JobSet, on
``harness/real_cluster`` with the two TPU pools' four real nodes (pool a holds one slice, pool
b the other). A step is about 0.1 s of "compute" on 2 slices and twice that on one (the same
rows over half the devices).

Once the job reports step 20, pool b's Spot VMs are preempted: their machines stop at once
(kubelets, containers and all) and their Nodes are deleted, as GKE deletes a preempted VM's;
after a fixed outage the machines boot again and their kubelets register. The same outage,
both ways; each run is stopped at the same deadline after the nodes are back (SIGTERM, as a
worker is stopped). From process 0's own step times (``bench/pods/elastic_steps.py``) and the
task's JobSets, polled:

- steps: the newest step reached by the deadline (the same step 20 before the loss);
- idle slice-seconds: slices held (with capacity, and asked for by the job) while no step
  ran, from the loss to the deadline;
- goodput: the steps gained after the loss, at the 2-slice step time, over the time from the
  loss to the deadline;
- redone: the most steps run again after a restart (the checkpoint interval at most);
- detection: from the loss to the first new attempt (a JobSet restart, or the provider's
  JobSet of another size): the lost pods' end as Kubernetes sees it (PodGC, once the Nodes
  are gone), the JAX collectives' failure, ``shrink_after`` (8 s: kube-scheduler's word
  that a pod fits nowhere comes and goes on a busy machine);
- restart: from a new attempt (or the capacity's return, for pods that waited for it) to its
  first step: pods scheduled and started, JAX and Orbax imported, the checkpoint restored.
  The outage must be at least 5 times the longest.

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
import threading
import time
from pathlib import Path
from typing import Any

from bench.targets import Targets, quick

ROOT = Path(__file__).resolve().parent.parent
LOSE_AT = 20
OUTAGE_S = quick(150.0, 12.0)
TAIL_S = quick(40.0, 6.0)  # from the capacity's return to the deadline
CHECKPOINT_EVERY = 10
TARGET_STEPS = 1.5  # min_slices' steps over waiting's, by the deadline
MODES = {"waiting": "bench_elastic_wait", "min_slices": "bench_elastic_min_slices"}
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"


def airflow_home(work: Path, kubeconfig: Path) -> dict[str, str]:
    """The env of an ``airflow`` command on a fresh SQLite home, migrated, whose
    ``kubernetes_default`` is the cluster."""
    from harness.real_cluster.identities import connection

    env = {
        **os.environ,
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "bench" / "dags"),
        "AIRFLOW__JAX__RESUME_SETTLE_SECONDS": "0",
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": connection(kubeconfig),
        "PYTHONPATH": str(ROOT),
        "BENCH_ELASTIC_OUT": str(work),
        "BENCH_ELASTIC_DEADLINE": str(LOSE_AT + OUTAGE_S + TAIL_S + 900),  # a backstop
    }
    migrate = [sys.executable, "-m", "airflow", "db", "migrate"]
    subprocess.run(migrate, env=env, check=True, capture_output=True)
    return env


class Attempts:
    """When each new attempt of the task's job appeared: a JobSet restart, or a JobSet of
    its own (the provider's resize), polled from the API server."""

    def __init__(self, api: Any) -> None:
        self.api, self.times = api, []
        self._seen: set[tuple[str, int]] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        from airflow_provider_jax.manifest import status

        while not self._done.wait(0.1):
            try:
                jobsets = self.api.get(JOBSETS)["items"]
            except Exception:  # the API server busy a moment: look again
                continue
            for jobset in jobsets:
                attempt = (status.uid(jobset) or "", status.restarts(jobset))
                if attempt not in self._seen:
                    self._seen.add(attempt)
                    self.times.append(time.time())

    def stop(self) -> list[float]:
        self._done.set()
        self._thread.join()
        return self.times


def run_once(plane: Any, env: dict[str, str], mode: str, work: Path) -> dict[str, Any]:
    """One job whose pool b is preempted for ``OUTAGE_S``: its step times and moves."""
    from harness.real_cluster.nodes import NODES, pools

    pool_b = [n.name for n in pools(NODES)["tpu-v5e-b"]]
    api = plane.api()
    dag_id = MODES[mode]
    steps_file = work / dag_id / "steps.jsonl"
    log = (work / f"{mode}.log").open("w")
    attempts = Attempts(api)
    proc = subprocess.Popen(
        [sys.executable, "-m", "airflow", "dags", "test", dag_id, "2024-01-01"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(proc, lambda: newest(steps_file) >= LOSE_AT, "step 20")
        lost = time.time()
        plane.cluster.preempt(pool_b, api)
        wait_for(proc, lambda: time.time() >= lost + OUTAGE_S, "the outage's end")
        plane.cluster.start(pool_b, api)  # until each node is Ready again
        back = time.time()
        wait_for(proc, lambda: time.time() >= back + TAIL_S, "the deadline")
        deadline = time.time()
    finally:
        proc.terminate()  # as a worker is stopped: on_kill deletes the task's JobSet
        try:
            proc.wait(timeout=300)  # its pods' graceful end, on a machine busy with tests
        except subprocess.TimeoutExpired:
            proc.kill()  # what is left of the JobSet goes in leave_nothing()
            proc.wait()
        log.close()
        plane.cluster.start(pool_b, api)  # booted again, if a failure left them stopped
        leave_nothing(api)
        changes = attempts.stop()
    marks = [json.loads(line) for line in steps_file.read_text().splitlines()]
    return measure(marks, lost, back, deadline, [t for t in changes if lost < t <= deadline])


def leave_nothing(api: Any) -> None:
    """The job's JobSets deleted (a stopped ``airflow dags test`` may not get to it) and its
    pods gone, before the next run."""
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    for jobset in api.get(JOBSETS)["items"]:
        api.delete(f"{JOBSETS}/{jobset['metadata']['name']}", body)
    pods = "/api/v1/namespaces/default/pods"
    api.wait_for(
        "the job's pods gone", lambda: not api.get(JOBSETS)["items"] + api.get(pods)["items"], 180
    )


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
    marks: list[dict[str, Any]],
    lost: float,
    back: float,
    deadline: float,
    attempts: list[float],
) -> dict[str, Any]:
    """The figures of one run from process 0's steps and the new attempts' times (after the
    loss)."""
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
            began = max((t for t in attempts if previous["t"] < t < mark["t"]), default=None)
            if began is None:  # no new attempt seen: the whole gap
                began = previous["t"]
            if mark["slices"] == 2 and began < back < mark["t"]:
                began = back  # its pods waited for the capacity
            restarts.append(mark["t"] - began)
        previous = mark
    window = deadline - lost
    return {
        "steps": reached,
        "steps after the loss": reached - at_loss,
        "idle slice-seconds": idle,
        "goodput": (reached - at_loss) * step_s / window,
        "steps redone": redone,
        "detection": (attempts[0] - lost) if attempts else float("nan"),
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
    from harness.real_cluster.control_plane import ControlPlane
    from harness.real_cluster.nodes import NODES, pools

    work = Path(tempfile.mkdtemp(prefix="bench-elastic-"))
    tpu = pools(NODES)
    plane = ControlPlane(work / "control-plane", (*tpu["tpu-v5e-a"], *tpu["tpu-v5e-b"])).up()
    try:
        env = airflow_home(work, plane.kubeconfig("admin"))
        runs = {mode: run_once(plane, env, mode, work) for mode in MODES}
    finally:
        plane.down()
    report(runs)


def report(runs: dict[str, dict[str, Any]]) -> None:
    print(
        f"a 2-slice job loses slice 1 at step {LOSE_AT} for {OUTAGE_S:g} s; deadline "
        f"{TAIL_S:g} s after it returns ({OUTAGE_S + TAIL_S:g} s after the loss)"
    )
    print(f"  {'':<24}{'waiting':>12}{'min_slices=1':>14}")
    rows = ["steps", "steps after the loss", "idle slice-seconds", "goodput", "steps redone",
            "detection", "restart", "step time"]  # fmt: skip
    for row in rows:
        w, e = runs["waiting"][row], runs["min_slices"][row]
        print(f"  {row:<24}{w:>12.3g}{e:>14.3g}")
    print(f"  sizes after the loss: waiting {runs['waiting']['sizes']}, "
          f"min_slices {runs['min_slices']['sizes']}")  # fmt: skip
    targets = Targets()
    restart = max(r["restart"] for r in runs.values())
    targets.at_least("outage / the longest restart", OUTAGE_S / max(restart, 1e-9), 5.0)
    ratio = runs["min_slices"]["steps"] / max(runs["waiting"]["steps"], 1)
    targets.at_least("min_slices / waiting, steps by the deadline", ratio, TARGET_STEPS)
    for mode, run in runs.items():
        targets.at_most(f"{mode}: steps redone after a restart", run["steps redone"],
                        CHECKPOINT_EVERY)  # fmt: skip
    targets.exit()


if __name__ == "__main__":
    main()
