"""From ``execute()`` to the program's first step, and the API requests on the way: our operator
against the cncf provider's ``KubernetesJobOperator`` (deferrable) running the same one-pod
program on the same real cluster (``harness/real_cluster``: real nodes, pods in containers of
the runtime image), interleaved (#48). Ours runs on an H100 node, theirs (no accelerator) on
a CPU node; the program writes to a folder shared with the pods (a hostPath volume).

Both run as one identity (``airflow-jax``: the docs' Role, plus what the cncf operator needs
for Jobs), both defer, and both triggers run here to the job's end, as a triggerer would.
The program writes the wall time of its first step to a file; the API server's audit log
gives every request of that identity, until the first step and until the task completes.
Our operator runs the program as a one-node GPU job (``h100-80gb-8``, one pod), with its
defaults: the leader's log streamed, its JobSet deleted when done.

    python -m bench.startup [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.real_apiserver_watch import audited_plane, audited_requests, received
from bench.targets import Targets, quick

PROGRAM = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text(repr(time.time()))"
CNCF_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs", "jobs/status"],
     "verbs": ["create", "get", "list", "watch", "delete", "patch"]},
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch", "delete"]},
]  # fmt: skip


def context(task_id: str, run: int) -> dict[str, Any]:
    """What either operator's execute() reads of its task instance."""
    from datetime import UTC, datetime

    ti = SimpleNamespace(
        dag_id="bench", task_id=task_id, run_id=f"bench-{run + 1}", map_index=-1, try_number=1,
        start_date=datetime.now(UTC), xcom_push=lambda **_: None,
    )  # fmt: skip
    dag = SimpleNamespace(dag_id="bench", parent_dag=None)
    return {"ti": ti, "task_instance": ti, "run_id": ti.run_id, "dag": dag}


def finish(op: Any, ctx: dict[str, Any]) -> Any:
    """execute(), then its trigger to the end and execute_complete(), as Airflow would."""
    from airflow.sdk.exceptions import TaskDeferred

    try:
        return op.execute(ctx)
    except TaskDeferred as raised:
        deferral = raised

    async def first_event() -> Any:
        async for event in deferral.trigger.run():
            return event.payload
        return None

    payload = asyncio.run(first_event())
    return getattr(op, deferral.method_name)(ctx, payload, **(deferral.kwargs or {}))


def shared(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bench's folder as a hostPath volume at its own path (where the program writes)."""
    volume = {"name": "bench", "hostPath": {"path": str(out.parent), "type": "Directory"}}
    return volume, {"name": "bench", "mountPath": str(out.parent)}


def ours(out: Path, run: int) -> Any:
    from airflow_provider_jax.operators import JaxGpuJobOperator
    from harness.real_cluster.images import RUNTIME_IMAGE

    volume, mount = shared(out)
    return JaxGpuJobOperator(
        task_id="ours", name=f"startup-ours-{run + 1}", accelerator="h100-80gb-8", num_nodes=1,
        image=RUNTIME_IMAGE, command=["python3", "-c", PROGRAM, str(out)], backend="kubernetes",
        deferrable=True, termination_grace_period=5, volumes=[volume], volume_mounts=[mount],
    )  # fmt: skip


def theirs(out: Path, run: int) -> Any:
    from airflow.providers.cncf.kubernetes.operators.job import KubernetesJobOperator
    from kubernetes.client import models

    from harness.real_cluster.images import RUNTIME_IMAGE

    volume, mount = shared(out)
    return KubernetesJobOperator(
        task_id="theirs", name=f"startup-theirs-{run + 1}", namespace="default",
        image=RUNTIME_IMAGE, cmds=["python3", "-c", PROGRAM, str(out)], deferrable=True,
        wait_until_job_complete=True, parallelism=1, get_logs=True, job_poll_interval=1,
        termination_grace_period=5, random_name_suffix=False,
        volumes=[models.V1Volume(name="bench", host_path=models.V1HostPathVolumeSource(
            path=volume["hostPath"]["path"], type="Directory"))],
        volume_mounts=[models.V1VolumeMount(name="bench", mount_path=mount["mountPath"])],
    )  # fmt: skip


def run_once(plane: Any, which: str, run: int, work: Path) -> dict[str, float]:
    out = work / f"{which}-{run}.first-step"
    op = (ours if which == "ours" else theirs)(out, run)
    started = time.time()
    finish(op, context(which, run))
    done = time.time()
    first_step = float(out.read_text())
    time.sleep(1.5)  # the audit log is written in batches
    requests = audited_requests(plane, started)
    stamps = [received(r) for r in requests]
    if os.environ.get("BENCH_STARTUP_SHOW"):
        for r, at in sorted(zip(requests, stamps, strict=True), key=lambda p: p[1]):
            print(f"    {which} {at - started:6.2f}s {r['verb']} {r['requestURI'][:100]}")
    return {
        "seconds to the first step": first_step - started,
        "requests to the first step": sum(1 for s in stamps if s <= first_step),
        "requests to the end": sum(1 for s in stamps if s <= done),
        "seconds to the end": done - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=quick(5, 1))
    args = parser.parse_args()
    from harness.k8s_emulator.rbac import docs_role_manifest
    from harness.real_cluster.identities import connection, grant

    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    from harness.real_cluster.nodes import CPU_NODE, NODES, pools

    plane = audited_plane(work / "control-plane", (pools(NODES)["h100-pool"][0], CPU_NODE)).up()
    results: dict[str, list[dict[str, float]]] = {"ours": [], "theirs": []}
    try:
        role = docs_role_manifest()
        role["rules"] = [*role["rules"], *CNCF_RULES]
        grant(plane.api(), role)
        os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = connection(plane.kubeconfig("airflow"))
        for which in results:  # a first run of each, not counted: imports, caches, clients
            run_once(plane, which, -1, work)
        for run in range(args.runs):
            for which in results:  # interleaved
                results[which].append(run_once(plane, which, run, work))
    finally:
        plane.down()
    report(results)


def report(results: dict[str, list[dict[str, float]]]) -> None:
    rows = list(results["ours"][0])
    median = {w: {r: statistics.median(x[r] for x in v) for r in rows} for w, v in results.items()}
    print(f"one-pod program, median of {len(results['ours'])} interleaved runs")
    print(f"  {'':<28}{'ours':>10}{'KubernetesJobOperator':>24}")
    for row in rows:
        print(f"  {row:<28}{median['ours'][row]:>10.2f}{median['theirs'][row]:>24.2f}")
    targets = Targets()
    targets.at_most(
        "ours / theirs, seconds to the first step",
        median["ours"]["seconds to the first step"] / median["theirs"]["seconds to the first step"],
        1.0,
    )
    targets.at_most(
        "ours - theirs, requests to the first step",
        median["ours"]["requests to the first step"]
        - median["theirs"]["requests to the first step"],
        0,
    )
    targets.exit()


if __name__ == "__main__":
    main()
