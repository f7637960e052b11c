"""Triggerer scale: N = 100 and 1,000 concurrent ``JobSetTrigger``\\ s in one event loop,
against a trigger that polls every 10 s, on the same Kubernetes API emulator in the same run.

The triggerer's side runs in a fresh child process per scenario, each trigger's ``run()`` its
own task, as Airflow's ``TriggerRunner`` runs them, so its CPU time and peak RSS are its own.
The emulator (API server over TLS, JobSet controller, scripted pods: no real processes) runs
in this process. Every JobSet runs until a random moment ``FIRST_FINISH``-``--window``
seconds after the triggers start; one in ten fails. Meanwhile every watch is dropped within
``--drop-watch`` seconds, and twice the API server "restarts": every watch is cut and its
history is gone, so the informer meets 410 Gone and lists again. Every trigger must still
fire with its own JobSet's outcome.

Measured while the triggers wait:

- API requests per job per minute of waiting for the JobSet's status (list, watch, get), and
  per job for the leader's log, a fixed cost whatever the job's length (a pod list and one
  log stream per restart attempt, again after a cut);
- detection latency, from the emulator marking a JobSet finished to its trigger's event;
- the triggerer process's CPU seconds (share of one core, milliseconds per job) and peak RSS.

The triggers run with their defaults (leader log streaming on), with logging below WARNING
off. Run from the repository root::

    python -m bench.triggerer_scale [--jobs 100 1000] [--window 60] [--drop-watch 30]
        [--log-lines 0]

With ``BENCH_PROFILE=<file>`` the triggerer's side runs under ``cProfile`` and writes its
stats there (read them with ``pstats``); its CPU figures are then the profiler's, not ours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.emulated_cluster import LagProbe, cpu_between, percentile, rss_kib
from bench.queued_jobs import print_queued, queued_scenario
from bench.scale_report import (
    COUNT_AT,
    FAIL_EVERY,
    FIRST_FINISH,
    QUIET_FROM,
    Row,
    print_table,
)
from bench.targets import Targets, quick

POLL_INTERVAL = 10.0
NAMESPACE = "default"


# --- the triggerer's side (child process) ---------------------------------------------------


def poll_trigger_class() -> type:
    """The reference: a trigger that GETs its JobSet every 10 s through the same hook, as a
    plain polling deferrable operator would (defined here, so the provider does not ship it)."""
    from airflow.triggers.base import BaseTrigger, TriggerEvent

    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from airflow_provider_jax.jobset import status

    class JobSetPollTrigger(BaseTrigger):
        def __init__(self, *, name: str, namespace: str, cluster: dict[str, Any]) -> None:
            super().__init__()
            self.name, self.namespace, self.cluster = name, namespace, cluster

        def serialize(self) -> tuple[str, dict[str, Any]]:
            kwargs = {"name": self.name, "namespace": self.namespace, "cluster": self.cluster}
            return f"{__name__}.JobSetPollTrigger", kwargs

        async def run(self):  # type: ignore[override]

            hook = KubernetesCluster.from_dict(self.cluster).async_hook()
            while True:
                jobset = await hook.get_jobset(self.name, self.namespace)
                state = None if jobset is None else status.terminal_state(jobset)
                if jobset is None or state is not None:
                    outcome = "success" if state == status.COMPLETED else "failed"
                    yield TriggerEvent({"status": outcome, "name": self.name})
                    return
                await asyncio.sleep(POLL_INTERVAL)

    return JobSetPollTrigger


def memory_by_file(path: str, jobs: int) -> None:
    """The traced allocations alive now, by the file that made them, in KiB per job."""
    import tracemalloc

    stats = tracemalloc.take_snapshot().statistics("filename")
    lines = [f"{s.size / 1024 / jobs:8.1f} KiB/job {s.count / jobs:7.1f} blocks/job  "
             f"{s.traceback[0].filename}" for s in stats[:30]]  # fmt: skip
    total = sum(s.size for s in stats) / 1024 / jobs
    Path(path).write_text(f"traced total {total:.1f} KiB/job\n" + "\n".join(lines) + "\n")


def triggerer(kind: str, timeout: float, log_lines: int) -> None:
    """Wait, like one triggerer, on the JobSets named on stdin; print what happened as JSON."""
    import gc
    import logging
    import resource

    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from airflow_provider_jax.triggers.jobset import JobSetTrigger

    logging.disable(logging.WARNING)
    if os.environ.get("BENCH_TRACEMALLOC"):
        import tracemalloc

        tracemalloc.start()
    cluster = KubernetesCluster().to_dict()
    poll_class = poll_trigger_class()
    # Warm up (imports, the first connection), as a triggerer that has been up a while is.
    asyncio.run(KubernetesCluster().async_hook().get_jobset("warm-up", NAMESPACE))
    baseline_rss = rss_kib()
    tracked = [len(gc.get_objects()), 0]  # objects the collector tracks: after imports, at peak
    print("ready", flush=True)
    jobs: dict[str, str] = json.loads(sys.stdin.readline())  # name -> uid

    def make(name: str, uid: str) -> Any:
        # What the triggerer does: build each trigger from its serialized kwargs.
        if kind == "poll":
            kwargs = {"name": name, "namespace": NAMESPACE, "cluster": cluster}
            return poll_class(**poll_class(**kwargs).serialize()[1])
        trigger = JobSetTrigger(
            name=name, namespace=NAMESPACE, uid=uid, cluster=cluster, log_lines=log_lines
        )
        return JobSetTrigger(**trigger.serialize()[1])

    fired: dict[str, tuple[float, str]] = {}

    async def run_trigger(name: str, trigger: Any) -> None:
        # As TriggerRunner.run_trigger: iterate run() to its end, then cleanup().
        try:
            async for event in trigger.run():
                fired.setdefault(name, (time.monotonic(), event.payload["status"]))
        finally:
            await trigger.cleanup()

    async def run_all() -> None:
        # Every job's waiting state is in memory once all have started. Counted just before
        # the wait window: the count itself takes some 30 ms of CPU, which at the window's end
        # read as 0.6 % of a core of "waiting".
        asyncio.get_running_loop().call_later(
            COUNT_AT, lambda: tracked.__setitem__(1, len(gc.get_objects()))
        )
        if where := os.environ.get("BENCH_TRACEMALLOC"):  # where the waiting jobs' memory is
            asyncio.get_running_loop().call_later(COUNT_AT, memory_by_file, where, len(jobs))
        tasks = [asyncio.create_task(run_trigger(n, make(n, u)), name=n) for n, u in jobs.items()]
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                print(f"trigger {task.get_name()} crashed: {task.exception()!r}", file=sys.stderr)

    samples: list[tuple[float, float]] = []  # (monotonic time, CPU seconds so far)
    done = threading.Event()
    gc_time = [0.0, 0]  # seconds in the cyclic garbage collector, and its full collections
    gc_began = [0.0]

    def gc_clock(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_began[0] = time.perf_counter()
            return
        gc_time[0] += time.perf_counter() - gc_began[0]
        gc_time[1] += info["generation"] == 2

    gc.callbacks.append(gc_clock)

    def sample() -> None:
        while True:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            samples.append((time.monotonic(), usage.ru_utime + usage.ru_stime))
            if done.wait(0.5):
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.monotonic()
    if os.environ.get("BENCH_PROFILE"):
        import cProfile

        with cProfile.Profile(time.process_time) as prof:  # CPU time: the emulator shares the cores
            asyncio.run(run_all())
        prof.dump_stats(os.environ["BENCH_PROFILE"])
    else:
        asyncio.run(run_all())
    end = time.monotonic()
    gc.callbacks.remove(gc_clock)
    done.set()
    sampler.join()
    report = {
        "start": start,
        "end": end,
        "fired": fired,
        "cpu": samples,
        "gc": gc_time,
        "tracked": tracked,
        "baseline_rss_kib": baseline_rss,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    print(json.dumps(report), flush=True)


# --- the cluster's side (this process) ------------------------------------------------------


def scenario(
    emulator: Any,
    kind: str,
    jobs: int,
    window: float,
    drop_watch: float,
    seed: int,
    env: dict,
    log_lines: int = 1000,
) -> Row:
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from tests.support.jobsets import manifest
    from tests.support.k8s_emulator import Faults, PodScript

    emulator.reset()
    rng = random.Random(seed)
    names = [f"job-{i:04d}-0123456789" for i in range(jobs)]
    failing = set(rng.sample(names, jobs // FAIL_EVERY))
    # Every pod runs until the plan ends it: host 1 of a failing JobSet with exit code 1.
    emulator.script(
        lambda pod: PodScript(
            exit_code=int(pod.jobset in failing and pod.host_index == 1),
            logs=[f"training on {pod.plan.tag}"],
            duration=math.inf,
        )
    )
    hook = KubernetesCluster().hook()
    with ThreadPoolExecutor(8) as pool:
        created = list(pool.map(hook.create_jobset, [manifest(n) for n in names]))
    uids = {c["metadata"]["name"]: c["metadata"]["uid"] for c in created}

    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.triggerer_scale",
            "--triggerer",
            kind,
            "--log-lines",
            str(log_lines),
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    probe = LagProbe(emulator)
    restarts = [
        threading.Timer(FIRST_FINISH + (window - FIRST_FINISH) * k / 3, emulator.restart)
        for k in (1, 2)
    ]
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the triggerer process did not start")
        ends = {n: rng.uniform(FIRST_FINISH, window) for n in names}
        emulator.call(lambda: _end_later(emulator, ends))
        emulator.faults = Faults(drop_watch_after=drop_watch)
        for thread in (probe, *restarts):
            thread.start()
        out, _ = child.communicate(json.dumps(uids) + "\n", timeout=window + 120)
    finally:
        probe.stopped.set()
        for timer in restarts:
            timer.cancel()
        child.kill()
    if child.returncode:
        raise RuntimeError(f"the triggerer process failed ({child.returncode})")
    report = json.loads(out.strip().splitlines()[-1])
    start, end = report["start"], report["end"]
    requests = [r for r in emulator.requests if start <= r.at <= end]
    fired = {name: (at, outcome) for name, (at, outcome) in report["fired"].items()}
    expected = {n: "failed" if n in failing else "success" for n in names}
    finished = emulator.controller.finished_at
    latencies = [fired[n][0] - finished[n] for n in names if n in fired and n in finished]
    return Row(
        scenario="JobSetTrigger" if kind == "watch" else f"poll every {POLL_INTERVAL:.0f} s",
        jobs=jobs,
        status_requests=sum(1 for r in requests if "/jobsets" in r.path),
        log_requests=sum(1 for r in requests if "/pods" in r.path),
        lists=sum(1 for r in requests if r.path.endswith("/jobsets") and not r.watch),
        job_minutes=sum(fired.get(n, (end, None))[0] - start for n in names) / 60,
        p50=percentile(latencies, 0.5),
        p95=percentile(latencies, 0.95),
        cpu=cpu_between(report["cpu"], start, end),
        wall=end - start,
        quiet_cpu_share=cpu_between(report["cpu"], start + QUIET_FROM, start + FIRST_FINISH)
        / (FIRST_FINISH - QUIET_FROM),
        baseline_rss_mib=report["baseline_rss_kib"] / 1024,
        peak_rss_mib=report["peak_rss_kib"] / 1024,
        gc_s=report["gc"][0],
        gc_full=report["gc"][1],
        tracked_per_job=(report["tracked"][1] - report["tracked"][0]) / jobs,
        missed=sum(1 for n in names if fired.get(n, (0, None))[1] != expected[n]),
        emulator_lag_p95=percentile(probe.lags, 0.95),
    )


def _end_later(emulator: Any, ends: dict[str, float]) -> None:
    """On the emulator's loop: end each JobSet's pods ``ends[name]`` seconds from now."""
    loop = asyncio.get_running_loop()
    pods = emulator.controller.pods.values()

    def end(name: str) -> None:
        for pod in pods:
            if pod.jobset == name:
                pod.released.set()

    for name, delay in ends.items():
        loop.call_later(delay, end, name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="*", default=quick([100, 1000], [20]))
    parser.add_argument(
        "--window", type=float, default=quick(60, FIRST_FINISH + 5), help="JobSets finish within"
    )
    parser.add_argument("--drop-watch", type=float, default=30.0, help="watches last at most")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=["watch", "poll"], help="run one kind only")
    parser.add_argument(
        "--log-lines", type=int, default=1000, help="leader log lines per job; 0: no streaming"
    )
    parser.add_argument(
        "--queued",
        type=int,
        default=quick(1000, 0),
        help="JobSets queued by Kueue; 0: skip that scenario",
    )
    parser.add_argument("--queued-wait", type=float, default=180.0, help="seconds they wait")
    parser.add_argument("--triggerer", choices=["watch", "poll"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
    if args.triggerer:
        triggerer(args.triggerer, timeout=args.window + 90, log_lines=args.log_lines)
        return 0

    import logging

    from tests.support.certificates import self_signed
    from tests.support.k8s_emulator import Emulator

    logging.disable(logging.WARNING)
    # The CRD is checked by the tests; here it would only slow the creates down.
    work = Path(tempfile.mkdtemp(prefix="bench-triggerer-"))
    # Over TLS with a cluster CA, like a real API server: a client pays for a handshake, and
    # not for loading the system's CA store, as it would for a plain-HTTP server.
    emulator = Emulator(lambda body: []).start(self_signed(work))
    kubeconfig = emulator.kubeconfig(work / "kubeconfig.json")
    os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = emulator.connection(kubeconfig)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    kinds = [args.only] if args.only else quick(["watch", "poll"], ["watch"])
    rows = []
    queued = None
    try:
        if args.queued:
            queued = queued_scenario(emulator, args.queued, args.queued_wait, env)
            print(f"  Kueue-queued, N={args.queued}: done", flush=True)
        for jobs in args.jobs:
            for kind in kinds:
                rows.append(
                    scenario(
                        emulator,
                        kind,
                        jobs,
                        args.window,
                        args.drop_watch,
                        args.seed,
                        env,
                        args.log_lines,
                    )
                )
                print(f"  {rows[-1].scenario}, N={jobs}: done", flush=True)
    finally:
        emulator.stop()
    targets = Targets()
    if rows:
        print_table(rows, args.window, args.drop_watch, targets)
    if queued is not None:
        print_queued(queued, targets)
    targets.exit()


if __name__ == "__main__":
    sys.exit(main())
