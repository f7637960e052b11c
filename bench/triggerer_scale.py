"""Triggerer scale: N = 100, 1,000 and 10,000 concurrent ``JobSetTrigger``\\ s in one event
loop, against a trigger that polls every 10 s, on the same Kubernetes API emulator in the same
run; at N = 1,000 also the old code (``--against``), side by side.

The triggerer's side runs in a fresh child process per scenario, each trigger's ``run()`` its
own task, as Airflow's ``TriggerRunner`` runs them, so its CPU time and peak RSS are its own.
The emulator (API server over TLS, JobSet controller, scripted pods: no real processes) runs
in this process. Every JobSet runs until a random moment between the wait window's end and
``--window`` seconds after the triggers start (``scale_report.schedule``: the start-up takes
longer with more triggers); one in ten fails. Meanwhile every watch is dropped within
``--drop-watch`` seconds, and twice the API server "restarts": every watch is cut and its
history is gone, so the informer meets 410 Gone and lists again. Every trigger must still
fire with its own JobSet's outcome. While the triggers run, the emulator's process runs
without its cyclic garbage collector: at N = 10,000 each full collection of its heap paused
its loop, and so every JobSet's end and event, for 4.6-6.6 s, which a kube-apiserver written
in Go does not do.

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
stats to ``<file>.<pid>``, one per child (read them with ``pstats``); its CPU figures are then
the profiler's, not ours. ``BENCH_LATENCIES=<file>`` writes each JobSet's end and detection
latency, the restarts, the JobSet and pod requests and the triggerer's CPU, as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.emulated_cluster import (
    LagProbe,
    cpu_between,
    cpu_share_within,
    percentile,
    rss_kib,
)
from bench.old_code import OLD_CODE, extract
from bench.queued_jobs import print_queued, queued_scenario
from bench.scale_report import (
    FAIL_EVERY,
    Row,
    Schedule,
    compare_with_old,
    print_table,
    schedule,
)
from bench.targets import Targets, quick
from bench.triggerer_child import POLL_INTERVAL

AFTER_RESTART = 15.0  # seconds after an API restart whose ends are told apart


@dataclass(frozen=True)
class Kind:
    """What waits: ``trigger`` ("watch": ``JobSetTrigger``; "poll": the reference), and whose
    code (``code``: an earlier commit's package, put first on the child's path)."""

    trigger: str
    label: str
    code: Path | None = None


def scenario(
    emulator: Any,
    kind: Kind,
    jobs: int,
    when: Schedule,
    drop_watch: float,
    seed: int,
    env: dict,
    log_lines: int = 1000,
) -> Row:
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from harness.jobsets import manifest
    from harness.k8s_emulator import Faults, PodScript

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

    if kind.code is not None:
        env = {**env, "PYTHONPATH": os.pathsep.join([str(kind.code), env["PYTHONPATH"]])}
    child = subprocess.Popen(
        [
            *(sys.executable, "-m", "bench.triggerer_child", kind.trigger),
            *("--log-lines", str(log_lines), "--timeout", str(when.window + 90)),
            *("--count-at", str(when.count_at)),
        ],
        env=env,
        # ``-m`` puts the working folder first on the path: there, the code to measure.
        cwd=kind.code,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    probe = LagProbe(emulator)
    restarted: list[float] = []  # when each restart began (monotonic)

    def restart() -> None:
        restarted.append(time.monotonic())
        emulator.restart()

    restarts = [
        threading.Timer(when.first_finish + (when.window - when.first_finish) * k / 3, restart)
        for k in (1, 2)
    ]
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the triggerer process did not start")
        # The emulator is Python, in this process: a full collection of its heap (the JobSets,
        # their pods, the watch history: 2 GiB at N = 10,000) stopped its loop for 4.6-6.6 s,
        # no JobSet ending and no event sent meanwhile, and each pause landed in the
        # triggerer's detection latency. A kube-apiserver (Go: a concurrent collector) does
        # not stop so. The emulator's cyclic garbage waits for the scenario's end instead.
        gc.disable()
        ends = {n: rng.uniform(when.first_finish, when.window) for n in names}
        emulator.call(lambda: _end_later(emulator, ends))
        emulator.faults = Faults(drop_watch_after=drop_watch)
        for thread in (probe, *restarts):
            thread.start()
        out, _ = child.communicate(json.dumps(uids) + "\n", timeout=when.window + 120)
    finally:
        gc.enable()
        probe.stopped.set()
        for timer in restarts:
            timer.cancel()
        child.kill()
    if child.returncode:
        raise RuntimeError(f"the triggerer process failed ({child.returncode})")
    report = json.loads(out.strip().splitlines()[-1])
    if kind.code is not None and report["code"] != str(kind.code):
        raise RuntimeError(f"the child ran {report['code']}, not {kind.code}")
    start, end = report["start"], report["end"]
    requests = [r for r in emulator.requests if start <= r.at <= end]
    fired = {name: (at, outcome) for name, (at, outcome) in report["fired"].items()}
    expected = {n: "failed" if n in failing else "success" for n in names}
    finished = emulator.controller.finished_at
    latencies = [fired[n][0] - finished[n] for n in names if n in fired and n in finished]
    # Away from the restarts: each cuts every connection and wipes the history, so the
    # informer relists every JobSet (10,000: 20 pages) while the streams reconnect.
    calm = [
        fired[n][0] - finished[n]
        for n in names
        if n in fired
        and n in finished
        and not any(0 <= finished[n] - at <= AFTER_RESTART for at in restarted)
    ]
    if dump := os.environ.get("BENCH_LATENCIES"):
        Path(dump).write_text(
            json.dumps(
                {
                    "restarts": [at - start for at in restarted],
                    "ends": sorted(
                        (finished[n] - start, fired[n][0] - finished[n])
                        for n in names
                        if n in fired and n in finished
                    ),
                    "lag": probe.lags,
                    "jobset_requests": [
                        (r.at - start, r.watch, "continue" in r.query, r.status)
                        for r in requests
                        if r.path.endswith("/jobsets")
                    ],
                    "triggerer_cpu": [(at - start, cpu) for at, cpu in report["cpu"]],
                    "full_gcs": [(at - start, spent) for at, spent in report["full_gcs"]],
                    "emulator_rss_mib": rss_kib() / 1024,
                    "pod_requests": [
                        (r.at - start, r.path.rsplit("/", 1)[-1], r.query, r.status)
                        for r in requests
                        if "/pods" in r.path
                    ],
                }
            )
        )
    return Row(
        scenario=kind.label,
        jobs=jobs,
        when=when,
        status_requests=sum(1 for r in requests if "/jobsets" in r.path),
        log_requests=sum(1 for r in requests if "/pods" in r.path),
        lists=sum(1 for r in requests if r.path.endswith("/jobsets") and not r.watch),
        job_minutes=sum(fired.get(n, (end, None))[0] - start for n in names) / 60,
        p50=percentile(latencies, 0.5),
        p95=percentile(latencies, 0.95),
        p95_calm=percentile(calm, 0.95),
        cpu=cpu_between(report["cpu"], start, end),
        wall=end - start,
        quiet_cpu_share=cpu_share_within(
            report["cpu"], start + when.quiet_from, start + when.first_finish
        ),
        baseline_rss_mib=report["baseline_rss_kib"] / 1024,
        waiting_rss_mib=report["waiting_rss_kib"] / 1024,
        peak_rss_mib=report["peak_rss_kib"] / 1024,
        peak_at=max(report["rss"], key=lambda sample: sample[1])[0] - start,
        gc_s=report["gc"][0],
        gc_full=report["gc"][1],
        tracked_per_job=(report["tracked"][1] - report["tracked"][0]) / jobs,
        missed=sum(1 for n in names if fired.get(n, (0, None))[1] != expected[n]),
        emulator_lag_p95=percentile(probe.lags, 0.95),
    )


def _end_later(emulator: Any, ends: dict[str, float]) -> None:
    """On the emulator's loop: end each JobSet's pods ``ends[name]`` seconds from now."""
    loop = asyncio.get_running_loop()
    by_jobset: dict[str, list[Any]] = {}  # each JobSet's pods, indexed once they all exist

    def end(name: str) -> None:
        if name not in by_jobset:  # one pass over the pods, not one per JobSet (N = 10,000)
            by_jobset.clear()
            for pod in emulator.controller.pods.values():
                by_jobset.setdefault(pod.jobset, []).append(pod)
        for pod in by_jobset.get(name, ()):
            pod.released.set()

    for name, delay in ends.items():
        loop.call_later(delay, end, name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="*", default=quick([100, 1000, 10_000], [20]))
    parser.add_argument(
        "--window", type=float, help="JobSets finish within (default: 40 s after the first)"
    )
    parser.add_argument("--drop-watch", type=float, default=30.0, help="watches last at most")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=["watch", "poll"], help="run one kind only")
    parser.add_argument(
        "--against",
        default=quick(OLD_CODE, ""),
        help="also run JobSetTrigger as this commit has it, at N = 1,000; '': not",
    )
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
    args = parser.parse_args()
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))

    import logging

    from harness.certificates import self_signed
    from harness.k8s_emulator import Emulator

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
    kinds = [
        Kind("watch", "JobSetTrigger"),
        Kind("poll", f"poll every {POLL_INTERVAL:.0f} s"),
    ]
    kinds = [k for k in kinds if args.only in (None, k.trigger)][: quick(2, 1)]
    old = extract(args.against, work) if args.against else None
    rows = []
    queued = None
    try:
        if args.queued:
            queued = queued_scenario(emulator, args.queued, args.queued_wait, env)
            print(f"  Kueue-queued, N={args.queued}: done", flush=True)
        for jobs in args.jobs:
            # Past 1,000 the reference poller would be 1,000 GETs a second: not run there.
            order = [k for k in kinds if k.trigger == "watch" or jobs <= 1000]
            if old is not None and jobs == 1000:
                # Old, now, now, old: a later run in one emulator process measures slower (its
                # loop lags more: 0.2 s > 0.7 s p95 at N = 1,000; the burst's CPU 14 > 17 %
                # for the same code), so each code's mean has one early and one late run.
                was = Kind("watch", f"... at {args.against}", old)
                now = next(k for k in kinds if k.trigger == "watch")
                order = [was, now, now, was, *(k for k in order if k is not now)]
            for kind in order:
                rows.append(
                    scenario(
                        emulator,
                        kind,
                        jobs,
                        schedule(jobs, args.window),
                        args.drop_watch,
                        args.seed,
                        env,
                        args.log_lines,
                    )
                )
                print(f"  {rows[-1].scenario}, N={jobs}: done", flush=True)
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)  # the old code's copy, the certificates
    targets = Targets()
    if rows:
        print_table(rows, args.drop_watch, targets)
        compare_with_old(rows, targets)
    if queued is not None:
        print_queued(queued, targets)
    targets.exit()


if __name__ == "__main__":
    sys.exit(main())
