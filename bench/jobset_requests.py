"""Kubernetes API requests per JAX job per minute of waiting, and how fast a finished JobSet
is noticed: ``JobSetTrigger`` (one shared watch per namespace) against a trigger that polls
every 10 s, Airflow's usual interval, on the same API emulator in the same run.

N JobSets of ``--hosts`` hosts start together and finish at random times over ``--spread``
seconds; N triggers wait on them in one event loop, as in one triggerer, streaming no log, the
leader's log (``stream_logs="leader"``, the default) or every host's (``"all"``). Every request that reaches the emulator while
they wait is counted (creating the JobSets is not). Detection latency runs from the moment the
emulator marks a JobSet finished to the moment its trigger fires.

Run from the repository root::

    python -m bench.jobset_requests [--jobs 50] [--spread 60] [--hosts 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.targets import Targets, quick

POLL_INTERVAL = 10.0
TARGET = 0.2  # requests per job per minute of waiting (issue 7)


@dataclass(frozen=True)
class Row:
    scenario: str
    jobs: int
    requests: int
    per_job: float
    per_job_minute: float
    p50: float
    p95: float


async def poll_reference(hook: Any, name: str) -> None:
    """The reference: GET the JobSet every 10 s until it has finished."""
    from airflow_provider_jax.manifest.status import terminal_state

    while terminal_state(await hook.get_jobset(name, "default")) is None:
        await asyncio.sleep(POLL_INTERVAL)


def measure(
    emulator: Any, scenario: str, jobs: int, spread: float, waiter: Callable, hosts: int = 2
) -> Row:
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from harness.jobsets import manifest
    from harness.k8s_emulator import PodScript

    emulator.reset()
    durations = {f"job-{i:04d}-0123456789": random.uniform(5, spread) for i in range(jobs)}
    emulator.script(lambda pod: PodScript(duration=durations[pod.jobset]))
    hook = KubernetesCluster().hook()
    uids = {
        name: hook.create_jobset(manifest(name, hosts=hosts))["metadata"]["uid"]
        for name in durations
    }
    start, first = time.monotonic(), len(emulator.requests)
    fired: dict[str, float] = {}

    async def wait(name: str) -> None:
        await waiter(name, uids[name])
        fired[name] = time.monotonic()

    async def wait_all() -> None:
        await asyncio.gather(*(wait(name) for name in durations))

    asyncio.run(wait_all())
    requests = len(emulator.requests) - first
    waited = sum(fired[name] - start for name in durations) / 60
    latencies = sorted(fired[n] - emulator.controller.finished_at[n] for n in durations)
    return Row(
        scenario,
        jobs,
        requests,
        requests / jobs,
        requests / waited,
        statistics.median(latencies),
        latencies[int(0.95 * (len(latencies) - 1))],
    )


def trigger_waiter(stream_logs: str) -> Callable[[str, str], Awaitable[None]]:
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from airflow_provider_jax.triggers.jobset import JobSetTrigger

    cluster = KubernetesCluster().to_dict()

    async def wait(name: str, uid: str) -> None:
        trigger = JobSetTrigger(
            name=name, namespace="default", uid=uid, cluster=cluster, stream_logs=stream_logs
        )
        event = await trigger.wait()
        assert event.status == "success", event

    return wait


def poll_waiter() -> Callable[[str, str], Awaitable[None]]:
    from airflow_provider_jax.hooks.cluster import KubernetesCluster

    async def wait(name: str, uid: str) -> None:
        await poll_reference(KubernetesCluster().async_hook(), name)

    return wait


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=quick(50, 4))
    parser.add_argument(
        "--spread", type=float, default=quick(60, 3), help="seconds over which jobs end"
    )
    parser.add_argument("--hosts", type=int, default=2, choices=(1, 2, 8), help="hosts per job")
    args = parser.parse_args()
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))

    import logging

    from harness.k8s_emulator import Emulator

    logging.disable(logging.WARNING)  # the triggers' own log lines are not the point here
    # The CRD is checked by the tests (and its file may be absent); here it would only slow
    # the creates down, as in triggerer_scale.
    emulator = Emulator(lambda body: []).start()
    kubeconfig = emulator.kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig.json")
    os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = emulator.connection(kubeconfig)
    try:
        scenarios = [
            ("stream_logs=none", trigger_waiter("none")),
            ("stream_logs=leader", trigger_waiter("leader")),
            ("stream_logs=all", trigger_waiter("all")),
            (f"poll every {POLL_INTERVAL:.0f} s", poll_waiter()),
        ][: quick(4, 1)]  # quick: the trigger itself
        rows = [
            measure(emulator, scenario, args.jobs, args.spread, waiter, args.hosts)
            for scenario, waiter in scenarios
        ]
    finally:
        emulator.stop()
    print(
        f"\n{args.jobs} jobs of {args.hosts} hosts ending over {args.spread:.0f} s;"
        f" target <= {TARGET} req/job/min"
    )
    print(
        f"{'scenario':20} {'requests':>9} {'req/job':>8} {'req/job/min':>12} {'p50 s':>7} {'p95 s':>7}"
    )
    for row in rows:
        print(
            f"{row.scenario:20} {row.requests:>9} {row.per_job:>8.2f} {row.per_job_minute:>12.3f} "
            f"{row.p50:>7.2f} {row.p95:>7.2f}"
        )
    # The target is the wait itself: a log stream costs what it costs, per line.
    targets = Targets()
    (quiet,) = [row for row in rows if row.scenario == "stream_logs=none"]
    targets.at_most("stream_logs=none: requests per job per minute", quiet.per_job_minute, TARGET)
    targets.exit()


if __name__ == "__main__":
    main()
