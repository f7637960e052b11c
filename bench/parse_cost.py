"""Parse cost, as a user pays it: what a DAG file with our operator adds over the same DAG
file with no operator (the baseline: ``airflow.sdk`` and a DAG), in import time and in
memory, next to what the same DAG with KubernetesPodOperator adds. Each file is imported
in a fresh interpreter, interleaved, and the medians compared.

Targets: added time <= 0.1 s, added memory <= 10 MiB (tracemalloc's peak of the import,
and RSS), and >= 15x less added time than KubernetesPodOperator.
Run: ``python -m bench.parse_cost [runs]``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.targets import QUICK, Targets, quick

HEADER = """
import pendulum
from airflow.sdk import DAG
"""
OURS = (
    HEADER
    + """
from airflow_provider_jax.operators import JaxTpuSliceOperator

with DAG("parse_cost", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v6e-16",
        image="us-docker.pkg.dev/p/r/jax:latest",
        entrypoint="trainer.main:train",
        entrypoint_kwargs={"steps": 100},
    )
"""
)
THEIRS = (
    HEADER
    + """
from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

with DAG("parse_cost", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    KubernetesPodOperator(
        task_id="train",
        image="us-docker.pkg.dev/p/r/jax:latest",
        cmds=["python3", "-m", "trainer.main"],
        arguments=["--steps", "100"],
    )
"""
)
BASELINE = HEADER + "\nwith DAG('parse_cost', schedule=None): pass\n"
# Imports the DAG module once, timing it and tracing its allocations; RSS before and after.
PROBE = """
import json, resource, time, tracemalloc
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
before = rss()
TRACE and tracemalloc.start()
started = time.perf_counter()
import bench_dag_module
seconds = time.perf_counter() - started
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({"seconds": seconds, "peak": peak, "rss": rss() - before}))
"""
TIMING = (
    "import time; t = time.perf_counter(); import bench_dag_module; print(time.perf_counter() - t)"
)
KINDS = {"baseline": BASELINE, "ours": OURS, "KubernetesPodOperator": THEIRS}
MIB = 1024 * 1024


def measure(source: str, directory: Path, *, traced: bool) -> dict[str, float]:
    """One import of ``source`` as a module in a fresh interpreter: its wall time, and with
    ``traced`` its tracemalloc peak and RSS growth (tracing slows the import, so timing runs
    go untraced)."""
    (directory / "bench_dag_module.py").write_text(source)
    out = (
        subprocess.run(
            [sys.executable, "-c", f"TRACE = {not QUICK}\n{PROBE}" if traced else TIMING],
            cwd=directory,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    return json.loads(out) if traced else {"seconds": float(out)}


def main(runs: int) -> None:
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    memory: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(0 if QUICK else runs):  # interleaved, so drift hits all three alike
            for kind, source in KINDS.items():
                seconds[kind].append(measure(source, Path(tmp), traced=False)["seconds"])
        for _ in range(max(runs // 2, 1)):
            for kind, source in KINDS.items():
                memory[kind].append(measure(source, Path(tmp), traced=True))
    if QUICK:  # one import each, RSS only (tracemalloc triples the import time)
        seconds = {kind: [m["seconds"] for m in memory[kind]] for kind in KINDS}
    time_s = {kind: statistics.median(values) for kind, values in seconds.items()}
    peak = {k: statistics.median(m["peak"] for m in v) / MIB for k, v in memory.items()}
    rss = {k: statistics.median(m["rss"] for m in v) / MIB for k, v in memory.items()}
    print(f"\nParse cost: one DAG file imported in a fresh interpreter, median of {runs}")
    print(f"{'DAG file':<24}{'import s':>10}{'peak MiB':>10}{'RSS MiB':>10}")
    for kind in KINDS:
        print(f"{kind:<24}{time_s[kind]:>10.3f}{peak[kind]:>10.2f}{rss[kind]:>10.2f}")
    added = {kind: time_s[kind] - time_s["baseline"] for kind in KINDS}
    print(f"added over the baseline: ours {added['ours']:+.3f} s, KubernetesPodOperator "
          f"{added['KubernetesPodOperator']:+.3f} s (medians; a negative one is noise)")  # fmt: skip
    targets = Targets()
    targets.at_most("added import time", added["ours"], 0.1, " s")
    targets.at_most("added memory (tracemalloc peak)", peak["ours"] - peak["baseline"], 10, " MiB")
    targets.at_most("added memory (RSS)", rss["ours"] - rss["baseline"], 10, " MiB")
    less = added["KubernetesPodOperator"] / max(added["ours"], 1e-3)  # 1 ms: below the noise
    targets.at_least("KubernetesPodOperator's added time / ours", less, 15, "x")
    targets.exit()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else quick(9, 1))
