"""``make bench``: every benchmark in one report, each in a fresh interpreter.

Each prints its own table, and each figure next to its target with "met" or "NOT MET"
(``bench.targets``); the run fails when a bench crashes or misses a target.
``python -m bench NAME ...`` runs only the named ones; ``--quick`` runs each at a small size
in seconds, to show it still runs (``make test`` does; no verdict on the figures then).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCHES = [
    # First: the longest (it starts a control plane), so a quick run's other benches share
    # the machine with it instead of leaving it alone at the end.
    "real_apiserver_watch",  # the shared watch on the real kube-apiserver vs the emulator
    "recovery",  # a lost host: recreate vs in place + a host-local checkpoint tier
    "elastic",  # a lost slice: waiting for it vs going on without it (min_slices)
    "startup",  # execute() to the first step: ours vs KubernetesJobOperator, real cluster
    "multikueue",  # waiting through a MultiKueue manager of two real workers
    "parse_cost",  # DAG import time vs KubernetesPodOperator
    "local_overhead",  # local backend vs processes started by hand
    "local_gpu",  # the local backend on this machine's GPUs vs bare JAX (no GPU: skipped)
    "report_cost",  # report() every step vs none, on the GPU if there is one
    "profile_cost",  # steps outside a profile_steps window vs no profiling
    "orbax_requests",  # requests to find the newest finalized checkpoint
    "checkpoint_watchers",  # requests of asset watchers sharing one checkpoint directory
    "jobset_requests",  # API requests per job-minute and detection latency
    "triggerer_scale",  # 100, 1,000 and 10,000 concurrent triggers in one event loop
    "shared_stream_fanout",  # our informer vs Airflow 3.3's shared streams
]


# The benches that start real nodes: in a quick run, one at a time (two clusters' nodes would
# not fit two cores, nor a user's inotify instances: docs/testing.md).
REAL_NODES = {"recovery", "startup", "multikueue"}


def main(argv: list[str]) -> int:
    """Run the named benches (all by default); ``--quick`` runs each at a small size, three
    at a time (a quick run's figures are no verdict, so they may share the machine; the
    longest, the real control plane's, mostly waits)."""
    root = Path(__file__).resolve().parent.parent
    quick = "--quick" in argv
    names = [a for a in argv if a != "--quick"] or BENCHES
    missing = [n for n in names if not (root / "bench" / f"{n}.py").exists()]
    for name in missing:
        print(f"\n== {name}: not present, skipped")
    names = [n for n in names if n not in missing]
    if not quick:
        codes = [run(root, name, capture=False) for name in names]
    else:
        one_at_a_time = threading.Lock()  # for the benches that start real nodes

        def quick_run(name: str) -> int:
            if name not in REAL_NODES:
                return run(root, name, capture=True)
            with one_at_a_time:
                return run(root, name, capture=True)

        with ThreadPoolExecutor(3) as pool:
            codes = list(pool.map(quick_run, names))
    failed = [name for name, code in zip(names, codes, strict=True) if code]
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


def run(root: Path, name: str, *, capture: bool) -> int:
    """One bench in a fresh interpreter; with ``capture``, its output printed once it ends."""
    started = time.monotonic()
    if not capture:
        print(f"\n== {name}", flush=True)
    env = {**os.environ, "BENCH_QUICK": "1"} if capture else None
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
        text=True,
    )
    if capture:
        print(f"\n== {name}\n{done.stdout}", end="", flush=True)
    print(f"({name}: {time.monotonic() - started:.0f} s)", flush=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
