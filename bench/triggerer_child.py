"""The triggerer's side of ``bench.triggerer_scale`` and ``bench.queued_jobs``: one process
that waits, like one triggerer, on the JobSets named on its stdin, each trigger's ``run()`` its
own task as Airflow's ``TriggerRunner`` runs them, and prints what happened as JSON.

It runs whichever ``airflow_provider_jax`` comes first on its ``PYTHONPATH``: the working
tree's, or an earlier commit's (``--against``), so the two are measured side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.emulated_cluster import GcClock, rss_kib

POLL_INTERVAL = 10.0
NAMESPACE = "default"


def cluster_class() -> Any:
    """``KubernetesCluster``, where the code being measured keeps it (``hooks/`` since the
    layout of #33; the package's root before)."""
    try:
        from airflow_provider_jax.hooks.cluster import KubernetesCluster
    except ImportError:
        from airflow_provider_jax.cluster import KubernetesCluster  # type: ignore[no-redef]
    return KubernetesCluster


def poll_trigger_class() -> type:
    """The reference: a trigger that GETs its JobSet every 10 s through the same hook, as a
    plain polling deferrable operator would (defined here, so the provider does not ship it)."""
    from airflow.triggers.base import BaseTrigger, TriggerEvent

    from airflow_provider_jax.manifest import status

    KubernetesCluster = cluster_class()

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


def tracked_by_type() -> Counter[str]:
    """The objects the garbage collector tracks (what each full collection walks), by type;
    dicts by their first three keys."""
    import gc

    def kind(obj: object) -> str:
        if isinstance(obj, dict):
            return f"dict{sorted(map(str, obj))[:3]}"
        return type(obj).__qualname__

    return Counter(kind(obj) for obj in gc.get_objects())


def objects_by_type(path: str, jobs: int, before: Counter[str]) -> None:
    """The tracked objects added since ``before``, by type, per job."""
    added = tracked_by_type()
    added.subtract(before)
    lines = [f"{n / jobs:8.2f}/job  {name}" for name, n in added.most_common(50)]
    total = sum(added.values()) / jobs
    Path(path).write_text(f"{total:.1f} tracked objects/job\n" + "\n".join(lines) + "\n")


def triggerer(kind: str, timeout: float, log_lines: int, count_at: float) -> None:
    """Wait, like one triggerer, on the JobSets named on stdin; print what happened as JSON."""
    import gc
    import logging
    import resource

    from airflow_provider_jax.triggers.jobset import JobSetTrigger

    KubernetesCluster = cluster_class()

    logging.disable(logging.WARNING)
    if os.environ.get("BENCH_TRACEMALLOC"):
        import tracemalloc

        tracemalloc.start()
    cluster = KubernetesCluster().to_dict()
    poll_class = poll_trigger_class() if kind == "poll" else None
    # Warm up (imports, the first connection), as a triggerer that has been up a while is.
    asyncio.run(KubernetesCluster().async_hook().get_jobset("warm-up", NAMESPACE))
    baseline_rss = rss_kib()
    tracked = [len(gc.get_objects()), 0]  # objects the collector tracks: after imports, waiting
    waiting_rss = [0]
    before = tracked_by_type() if os.environ.get("BENCH_OBJECTS") else Counter()
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
                if event.payload["status"] not in ("success", "failed"):
                    print(f"trigger {name}: {event.payload}", file=sys.stderr)
        finally:
            await trigger.cleanup()

    def count_waiting() -> None:
        """Every job's waiting state is in memory once all have started."""
        tracked[1] = len(gc.get_objects())
        waiting_rss[0] = rss_kib()
        if where := os.environ.get("BENCH_TRACEMALLOC"):  # where the waiting jobs' memory is
            memory_by_file(where, len(jobs))
        if where := os.environ.get("BENCH_OBJECTS"):  # what the collector walks
            objects_by_type(where, len(jobs), before)

    async def run_all() -> None:
        asyncio.get_running_loop().call_later(count_at, count_waiting)
        tasks = [asyncio.create_task(run_trigger(n, make(n, u)), name=n) for n, u in jobs.items()]
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                print(f"trigger {task.get_name()} crashed: {task.exception()!r}", file=sys.stderr)

    samples: list[tuple[float, float]] = []  # (monotonic time, CPU seconds so far)
    rss: list[tuple[float, int]] = []  # (monotonic time, RSS in KiB)
    done = threading.Event()

    def sample() -> None:
        while True:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            samples.append((time.monotonic(), usage.ru_utime + usage.ru_stime))
            rss.append((time.monotonic(), rss_kib()))
            if done.wait(0.5):
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.monotonic()
    with GcClock() as gc_clock:
        if os.environ.get("BENCH_PROFILE"):
            import cProfile

            # CPU time: the emulator shares the cores.
            with cProfile.Profile(time.process_time) as prof:
                asyncio.run(run_all())
            # One file per child: a side-by-side run profiles each code (``.<pid>`` added).
            prof.dump_stats(f"{os.environ['BENCH_PROFILE']}.{os.getpid()}")
        else:
            asyncio.run(run_all())
    end = time.monotonic()
    done.set()
    sampler.join()
    report = {
        "start": start,
        "end": end,
        "fired": fired,
        "cpu": samples,
        "full_gcs": gc_clock.full,
        "rss": rss,
        "gc": [gc_clock.seconds, len(gc_clock.full)],
        "tracked": tracked,
        "baseline_rss_kib": baseline_rss,
        "waiting_rss_kib": waiting_rss[0],
        "peak_rss_kib": rss_kib("VmHWM"),
        "code": str(Path(sys.modules[JobSetTrigger.__module__].__file__ or "").parents[2]),
    }
    print(json.dumps(report), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["watch", "poll"])
    parser.add_argument("--log-lines", type=int, default=1000)
    parser.add_argument("--timeout", type=float, required=True, help="seconds, then cancel all")
    parser.add_argument("--count-at", type=float, default=10.0, help="seconds in: count memory")
    args = parser.parse_args()
    triggerer(args.kind, args.timeout, args.log_lines, args.count_at)
    return 0


if __name__ == "__main__":
    sys.exit(main())
