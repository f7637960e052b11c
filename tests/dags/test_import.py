"""Every example DAG imports cleanly, and parsing them loads no heavy library."""

from __future__ import annotations

from pathlib import Path

from tests.support.imports import heavy_modules_loaded_by

DAGS = Path(__file__).resolve().parents[2] / "dags"


def test_every_dag_imports_without_errors():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert len(bag.dags) >= 5
    for dag_id, dag in bag.dags.items():
        assert "example" in dag.tags, dag_id


def test_parsing_the_dags_loads_no_heavy_library():
    code = (
        "import pathlib, runpy, sys\n"
        f"sys.path.insert(0, {str(DAGS)!r})\n"
        f"for f in sorted(pathlib.Path({str(DAGS)!r}).glob('*.py')):\n"
        "    runpy.run_path(str(f))\n"
    )
    assert heavy_modules_loaded_by(code) == []
