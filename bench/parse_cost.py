"""Parse cost, as a user pays it: what a DAG file with our operator adds over the same DAG
file with no operator (the baseline: ``airflow.sdk`` and a DAG), in import time and in
memory, next to what the same DAG with KubernetesPodOperator adds. Each file is imported
in a fresh interpreter, interleaved, and the medians compared.

Every file starts with the same header (``pendulum`` and ``airflow.sdk``), which each probe
imports first, timed apart; the file itself is timed after it. The added cost is then the
difference of two short imports (baseline 0.03 s, ours 0.08 s) instead of two whole ones
(2 s and more on a slow day): on two busy cores a whole import swings by +-0.4 s from run
to run, and a median of 9 of them once put ours at +0.47 s where the same tree measured
+0.07 s alone. It is the same quantity: what a DAG file adds once ``airflow.sdk`` is in.

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
# The same DAG in every file; only the task differs (the baseline has none).
DAG_LINE = (
    'with DAG("parse_cost", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):'
)
OURS = f"""{HEADER}
from airflow_provider_jax.operators import JaxTpuSliceOperator

{DAG_LINE}
    JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v6e-16",
        image="us-docker.pkg.dev/p/r/jax:latest",
        entrypoint="trainer.main:train",
        entrypoint_kwargs={{"steps": 100}},
    )
"""
THEIRS = f"""{HEADER}
from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

{DAG_LINE}
    KubernetesPodOperator(
        task_id="train",
        image="us-docker.pkg.dev/p/r/jax:latest",
        cmds=["python3", "-m", "trainer.main"],
        arguments=["--steps", "100"],
    )
"""
BASELINE = f"{HEADER}\n{DAG_LINE}\n    pass\n"
# The header, timed; then the DAG module once, timed and traced; RSS before and after it.
PROBE = f"""
import json, resource, time, tracemalloc
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
started = time.perf_counter()
{HEADER.strip()}
header = time.perf_counter() - started
before = rss()
TRACE and tracemalloc.start()
started = time.perf_counter()
import bench_dag_module
seconds = time.perf_counter() - started
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({{"header": header, "seconds": seconds, "peak": peak, "rss": rss() - before}}))
"""
KINDS = {"baseline": BASELINE, "ours": OURS, "KubernetesPodOperator": THEIRS}
MIB = 1024 * 1024


def measure(source: str, directory: Path, *, traced: bool) -> dict[str, float]:
    """One import of ``source`` as a module in a fresh interpreter, after the header: the
    header's time and the file's, and with ``traced`` the file's tracemalloc peak and RSS
    growth (tracing slows the import, so timing runs go untraced)."""
    (directory / "bench_dag_module.py").write_text(source)
    out = subprocess.run(
        [sys.executable, "-c", f"TRACE = {traced}\n{PROBE}"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return json.loads(out.splitlines()[-1])


def main(runs: int) -> None:
    timed: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    memory: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(0 if QUICK else runs):  # interleaved, so drift hits all three alike
            for kind, source in KINDS.items():
                timed[kind].append(measure(source, Path(tmp), traced=False))
        for _ in range(max(runs // 2, 1)):
            for kind, source in KINDS.items():
                # Quick: one import each, RSS only (tracemalloc triples the import time).
                memory[kind].append(measure(source, Path(tmp), traced=not QUICK))
    if QUICK:
        timed = memory

    def median(of: dict[str, list[dict[str, float]]], what: str) -> dict[str, float]:
        return {kind: statistics.median(m[what] for m in samples) for kind, samples in of.items()}

    header, time_s = median(timed, "header"), median(timed, "seconds")
    peak = {kind: size / MIB for kind, size in median(memory, "peak").items()}
    rss = {kind: size / MIB for kind, size in median(memory, "rss").items()}
    print(f"\nParse cost: one DAG file imported in a fresh interpreter, median of {runs}")
    print("(header: pendulum and airflow.sdk, imported first; file: the DAG file after it)")
    print(f"{'DAG file':<24}{'header s':>10}{'file s':>10}{'peak MiB':>10}{'RSS MiB':>10}")
    for kind in KINDS:
        print(
            f"{kind:<24}{header[kind]:>10.3f}{time_s[kind]:>10.3f}"
            f"{peak[kind]:>10.2f}{rss[kind]:>10.2f}"
        )
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
