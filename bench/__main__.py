"""``make bench``: every benchmark in one report, each in a fresh interpreter.

Each prints its own table next to its reference and target; ``python -m bench NAME ...``
runs only the named ones.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCHES = [
    "parse_cost",  # DAG import time vs KubernetesPodOperator
    "local_overhead",  # local backend vs processes started by hand
    "orbax_requests",  # requests to find the newest finalized checkpoint
    "checkpoint_watchers",  # requests of asset watchers sharing one checkpoint directory
    "jobset_requests",  # API requests per job-minute and detection latency
    "triggerer_scale",  # 100 and 1,000 concurrent triggers in one event loop
    "shared_stream_fanout",  # our informer vs Airflow 3.3's shared streams
]


def main(names: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    failed = []
    for name in names or BENCHES:
        if not (root / "bench" / f"{name}.py").exists():
            print(f"\n== {name}: not present, skipped")
            continue
        print(f"\n== {name}", flush=True)
        started = time.monotonic()
        if subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=root).returncode:
            failed.append(name)
        print(f"({name}: {time.monotonic() - started:.0f} s)", flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
