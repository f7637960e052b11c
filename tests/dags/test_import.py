"""Every example DAG imports cleanly, and parsing them loads no heavy library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DAGS = Path(__file__).resolve().parents[2] / "dags"
HEAVY_PREFIXES = ("jax", "jaxlib", "kubernetes", "kubernetes_asyncio", "google.cloud.", "gcloud")


def test_every_dag_imports_without_errors():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert len(bag.dags) >= 5
    for dag_id, dag in bag.dags.items():
        assert "example" in dag.tags, dag_id


def test_parsing_the_dags_loads_no_heavy_library():
    code = (
        "import json, runpy, sys, pathlib\n"
        f"sys.path.insert(0, {str(DAGS)!r})\n"
        f"for f in sorted(pathlib.Path({str(DAGS)!r}).glob('*.py')):\n"
        "    runpy.run_path(str(f))\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    heavy = [
        m
        for m in loaded
        if any(
            m.startswith(p) if p.endswith(".") else m == p or m.startswith(p + ".")
            for p in HEAVY_PREFIXES
        )
    ]
    assert heavy == []
