"""Parse cost: import time of a DAG file using our operator vs the same DAG with
KubernetesPodOperator, each in a fresh interpreter, median of several runs.

Run: ``python -m bench.parse_cost [runs]``. Target: ours <= theirs.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

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


def import_seconds(source: str, directory: Path) -> float:
    """Cumulative import time of the DAG module, from ``-X importtime``, in seconds."""
    path = directory / "bench_dag_module.py"
    path.write_text(source)
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import bench_dag_module"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"\|\s+(\d+) \| bench_dag_module$", out.stderr, re.M)
    assert match, out.stderr[-2000:]
    return int(match[1]) / 1e6


def main(runs: int = 7) -> dict[str, float]:
    results: dict[str, list[float]] = {
        "baseline (DAG only)": [],
        "ours": [],
        "KubernetesPodOperator": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):  # interleaved, so drift hits all three alike
            results["baseline (DAG only)"].append(import_seconds(BASELINE, Path(tmp)))
            results["ours"].append(import_seconds(OURS, Path(tmp)))
            results["KubernetesPodOperator"].append(import_seconds(THEIRS, Path(tmp)))
    medians = {name: statistics.median(values) for name, values in results.items()}
    print(f"\nParse cost: import time of one DAG file, median of {runs} fresh interpreters")
    print(f"{'DAG file':<24}{'median s':>10}{'min s':>10}{'max s':>10}")
    for name, values in results.items():
        print(f"{name:<24}{medians[name]:>10.3f}{min(values):>10.3f}{max(values):>10.3f}")
    ratio = medians["ours"] / medians["KubernetesPodOperator"]
    verdict = "meets" if ratio <= 1 else "MISSES"
    print(f"ours / KubernetesPodOperator = {ratio:.2f} ({verdict} the target <= 1.00)")
    return medians


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
