"""The triggerer-scale scenario where nothing runs: N JobSets queued by Kueue on quota that
never frees, each waited on by a ``JobSetTrigger`` that reads its Workload's verdict and queue
position. Run through ``python -m bench.triggerer_scale`` (``--queued``).

Measured over the whole wait: every API request the triggerer makes (JobSet and Workload
list/watch, visibility API asks, pod lists) per job per minute, and the triggerer's CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bench.emulated_cluster import cpu_between
from bench.targets import Targets

TARGET_REQUESTS = 0.2  # requests per job per minute of waiting
TPU = "google.com/tpu"


@dataclass(frozen=True)
class QueuedRow:
    jobs: int
    minutes: float
    jobset_requests: int
    workload_requests: int
    position_requests: int
    other_requests: int
    cpu: float
    wall: float
    fired: int

    @property
    def requests(self) -> int:
        return (
            self.jobset_requests
            + self.workload_requests
            + self.position_requests
            + self.other_requests
        )

    @property
    def rate(self) -> float:
        return self.requests / (self.jobs * self.minutes)


def queued_scenario(emulator: Any, jobs: int, wait: float, env: dict) -> QueuedRow:
    """N JobSets waiting on quota behind one that holds it, for ``wait`` seconds."""
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from harness.jobsets import manifest, run_forever
    from harness.k8s_emulator.kueue_objects import ClusterQueue, LocalQueue

    emulator.reset()
    emulator.script(run_forever)
    emulator.queues(ClusterQueue("cq", {TPU: 8}, flavor="v6e"), LocalQueue("default", "q", "cq"))
    hook = KubernetesCluster().hook()
    hook.create_jobset(manifest("holder-0123456789", run_id="holder", queue_name="q"))
    names = [f"queued-{i:04d}-0123456789" for i in range(jobs)]
    bodies = [manifest(n, run_id=n, queue_name="q") for n in names]
    with ThreadPoolExecutor(8) as pool:
        created = list(pool.map(hook.create_jobset, bodies))
    uids = {c["metadata"]["name"]: c["metadata"]["uid"] for c in created}
    child = subprocess.Popen(
        [
            *(sys.executable, "-m", "bench.triggerer_child", "watch"),
            *("--timeout", str(wait), "--log-lines", "0"),
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the triggerer process did not start")
        out, _ = child.communicate(json.dumps(uids) + "\n", timeout=wait + 120)
    finally:
        child.kill()
    report = json.loads(out.strip().splitlines()[-1])
    start, end = report["start"], report["end"]
    requests = [r for r in emulator.requests if start <= r.at <= end]

    def count(part: str) -> int:
        return sum(1 for r in requests if part in r.path)

    return QueuedRow(
        jobs=jobs,
        minutes=(end - start) / 60,
        jobset_requests=count("/jobsets"),
        workload_requests=count("/workloads"),
        position_requests=count("/pendingworkloads"),
        other_requests=count("/pods") + count("/events"),
        cpu=cpu_between(report["cpu"], start, end),
        wall=end - start,
        fired=len(report["fired"]),
    )


def print_queued(row: QueuedRow, targets: Targets) -> None:
    print(
        f"\nKueue: {row.jobs} JobSets queued on quota for {row.wall:.0f} s (none admitted).\n"
        f"requests: {row.requests} (JobSets {row.jobset_requests}, Workloads "
        f"{row.workload_requests}, positions {row.position_requests}, pods/events "
        f"{row.other_requests}) = {row.rate:.4f} per job per minute\n"
        f"triggerer CPU: {row.cpu:.1f} s = {row.cpu / row.wall:.1%} of a core; fired: {row.fired}"
    )
    targets.at_most(f"queued N={row.jobs}: requests per job per minute", row.rate, TARGET_REQUESTS)
    targets.at_most(f"queued N={row.jobs}: triggers fired while queued", row.fired, 0)
