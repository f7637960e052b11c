"""Waiting through a MultiKueue manager (#49): what N waiting jobs cost the manager's API
server, and the latency MultiKueue adds from admission on the manager to Running on a worker.

Three real control planes (``harness/real_cluster/multikueue.py``): a manager whose API server
audits the triggerer's identity, and two workers. N JobSets go to the manager's MultiKueue
queue; its quota admits a few (dispatched to the workers), the rest wait on the manager. One
triggerer process (``bench.triggerer_child``) waits on all N for a window, as the ``airflow``
identity with the docs' Role. Status requests are the audited requests on JobSets, Workloads
and Kueue's visibility API, per job per minute of waiting.

Before that, one job alone on the empty queue runs to completion: the seconds from the manager's Workload being
admitted (MultiKueue's check Ready) to its pods running on the worker, median of a few.

    python -m bench.multikueue [--jobs 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.real_apiserver_watch import audited_plane, audited_requests
from bench.targets import Targets, quick

TARGET = 0.02  # status requests per waiting job per minute, as on one cluster
STATUS = ("jobsets", "workloads", "localqueues")
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"


def queued(name: str) -> dict[str, Any]:
    from harness.jobsets import manifest
    from harness.real_cluster.multikueue import QUEUE

    return manifest(name, queue_name=QUEUE)


def admitted_at(api: Any, jobset: str) -> float | None:
    """When the manager's Workload of ``jobset`` was admitted (epoch), or None yet."""
    from datetime import datetime

    for workload in api.get(WORKLOADS)["items"]:
        owners = [o["name"] for o in workload["metadata"].get("ownerReferences") or ()]
        for c in (workload.get("status") or {}).get("conditions") or ():
            if jobset in owners and c["type"] == "Admitted" and c["status"] == "True":
                stamp = c["lastTransitionTime"].replace("Z", "+00:00")
                return datetime.fromisoformat(stamp).timestamp()
    return None


def running_on(workers: dict[str, Any], jobset: str) -> float | None:
    """When every pod of ``jobset`` first ran on whichever worker has it (epoch), or None."""
    from datetime import datetime

    for plane in workers.values():
        pods = plane.api().get(
            f"/api/v1/namespaces/default/pods?labelSelector=jobset.sigs.k8s.io/jobset-name={jobset}"
        )["items"]
        started = [
            (p.get("status") or {}).get("startTime")
            for p in pods
            if (p.get("status") or {}).get("phase") in ("Running", "Succeeded")
        ]
        if pods and len(started) == len(pods) and all(started):
            last = max(s.replace("Z", "+00:00") for s in started)
            return datetime.fromisoformat(last).timestamp()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=quick(1000, 20))
    parser.add_argument("--window", type=float, default=quick(120.0, 30.0))
    parser.add_argument("--latency-runs", type=int, default=quick(3, 1))
    args = parser.parse_args()
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from harness.k8s_emulator.rbac import docs_role_manifest
    from harness.real_cluster.identities import connection, grant
    from harness.real_cluster.multikueue import connect, start_workers, worker_names

    targets = Targets()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        manager = audited_plane(work / "manager").up()
        workers: dict[str, Any] = {}
        try:
            workers = start_workers(work / "workers", worker_names(2))
            connect(manager, workers)
            grant(manager.api(), docs_role_manifest())
            os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = connection(manager.kubeconfig())
            hook = KubernetesCluster().hook()
            # First, on an empty queue: after the waiting phase its thousand deletions would
            # keep Kueue busy, and the job would time the queue, not MultiKueue.
            latencies = [_latency(hook, manager, workers, i) for i in range(args.latency_runs)]
            names = [f"wait-{i:04d}-0123456789" for i in range(args.jobs)]
            with ThreadPoolExecutor(8) as pool:
                created = list(pool.map(hook.create_jobset, [queued(n) for n in names]))
            uids = {c["metadata"]["name"]: c["metadata"]["uid"] for c in created}
            rate = _waiting_rate(manager, uids, args.window)
        finally:
            for plane in [*workers.values(), manager]:
                plane.down()
    print(f"MultiKueue: {args.jobs} jobs waiting through the manager for {args.window:g} s")
    targets.at_most("status requests per waiting job per minute", rate, TARGET)
    shown = ", ".join(f"{s:.2f}" for s in latencies)
    print(f"  admission on the manager -> Running on a worker: median "
          f"{statistics.median(latencies):.2f} s ({shown}; both stamps are whole seconds, "
          "so 0 means within the same second)")  # fmt: skip
    targets.exit()


def _waiting_rate(manager: Any, uids: dict[str, str], window: float) -> float:
    from harness.real_cluster.identities import connection

    env = {
        **os.environ,
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": connection(manager.kubeconfig("airflow")),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.triggerer_child", "watch", "--log-lines", "0",
         "--timeout", str(window), "--count-at", str(min(10.0, window / 2))],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdin is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the triggerer process did not start")
        time.sleep(2.0)
        child.stdin.write(json.dumps(uids) + "\n")
        child.stdin.flush()
        out, _ = child.communicate(timeout=window + 180)
    finally:
        child.kill()
    report = json.loads(out.strip().splitlines()[-1])
    # From the moment every trigger runs: the first list and watch of each shared informer
    # (and each queue's first position) are the start, not the waiting.
    since = report["start"] + min(10.0, window / 3)
    requests = audited_requests(manager, since)
    status = [r for r in requests if (r.get("objectRef") or {}).get("resource") in STATUS]
    minutes = (report["end"] - since) / 60
    print(f"  {len(status)} status requests in {minutes:.2f} min "
          f"({len(requests) - len(status)} others)")  # fmt: skip
    return len(status) / (len(uids) * minutes)


def _latency(hook: Any, manager: Any, workers: dict[str, Any], run: int) -> float:
    name = f"latency-{run}-0123456789"
    created = hook.create_jobset(queued(name))
    api = manager.api()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            admitted, running = admitted_at(api, name), running_on(workers, name)
            if admitted is not None and running is not None:
                return running - admitted
            time.sleep(0.2)
        raise RuntimeError(f"{name} did not run on a worker within 120 s")
    finally:
        hook.delete_jobset(name, "default", created["metadata"]["uid"])


if __name__ == "__main__":
    sys.exit(main())
