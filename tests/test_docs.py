"""Docs stay true: every Python sample runs, YAML samples parse, tables match the catalogue,
and the site builds in strict mode."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from airflow_provider_jax.accelerators import parse_tpu

REPO = Path(__file__).resolve().parent.parent
PAGES = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def samples(language: str) -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(REPO)}#{n}", code)
        for page in PAGES
        for n, (lang, code) in enumerate(FENCE.findall(page.read_text()))
        if lang == language
    ]


@pytest.mark.parametrize(("where", "code"), samples("python"), ids=lambda v: v if "#" in v else "")
def test_python_samples_run(where, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, where, "exec"), {"__name__": "docs_sample"})


@pytest.mark.parametrize(("where", "code"), samples("yaml"), ids=lambda v: v if "#" in v else "")
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
