"""Docs stay true: every Python sample runs, YAML samples parse, tables match the catalogue,
and the site builds in strict mode."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys

import pytest
import yaml

from airflow_provider_jax.manifest.accelerators import parse_tpu
from tests.support.docs_pages import PAGES, REPO

FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def samples(language: str) -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(REPO)}#{n}", code)
        for page in PAGES
        for n, (lang, code) in enumerate(FENCE.findall(page.read_text()))
        if lang == language
    ]


def ids(samples: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in samples]


@pytest.mark.parametrize(("where", "code"), samples("python"), ids=ids(samples("python")))
def test_python_samples_run(where, code, tmp_path, monkeypatch):
    """Run from a file, as a DAG file would be, so decorators can read their source."""
    monkeypatch.chdir(tmp_path)
    sample = tmp_path / "docs_sample.py"
    sample.write_text(code)
    runpy.run_path(str(sample), run_name="docs_sample")


@pytest.mark.parametrize(("where", "code"), samples("yaml"), ids=ids(samples("yaml")))
def test_yaml_samples_parse(where, code):
    assert list(yaml.safe_load_all(code))


def test_topology_table_matches_the_catalogue():
    rows = re.findall(
        r"^\| `(tpu-[^`]+)` \| `([^`]+)` \| (\d+) × (\d+) \| `([^`]+)` \| `([^`]+)` \|$",
        (REPO / "docs" / "concepts.md").read_text(),
        re.M,
    )
    assert len(rows) > 20
    for name, topology, hosts, per_host, gke, machine in rows:
        acc = parse_tpu(name)
        assert (acc.topology, acc.hosts, acc.chips_per_host) == (
            topology,
            int(hosts),
            int(per_host),
        )
        assert (acc.node_selector["cloud.google.com/gke-tpu-accelerator"], acc.machine_type) == (
            gke,
            machine,
        )


def test_site_builds_strictly(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "index.html").is_file()


def _exception_classes() -> list[str]:
    """Every exception class the package defines, by walking its source: a class whose base
    is an exception (a builtin one, Airflow's, or one of ours)."""
    import ast
    import builtins

    package = REPO / "airflow_provider_jax"
    classes: dict[str, list[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        known = getattr(builtins, name, None)
        if isinstance(known, type) and issubclass(known, BaseException):
            return True
        if name.startswith("Airflow") and name.endswith(("Exception", "Error")):
            return True
        return name not in seen and any(
            is_exception(base, seen | {name}) for base in classes.get(name, ())
        )

    return sorted(name for name, bases in classes.items() if bases and is_exception(name))


def test_every_exception_class_has_a_troubleshooting_entry():
    page = (REPO / "docs" / "troubleshooting.md").read_text()
    headings = "\n".join(line for line in page.splitlines() if line.startswith("## "))
    classes = _exception_classes()
    assert "JaxJobFailed" in classes and "TooFewGpus" in classes  # the walk finds them
    missing = [name for name in classes if f"`{name}`" not in headings]
    assert not missing, f"docs/troubleshooting.md has no entry (a ## heading) for {missing}"
