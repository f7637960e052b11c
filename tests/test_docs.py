"""Docs stay true: every Python sample runs, YAML samples parse, and the site builds in strict
mode, with mkdocs' link and anchor validation on. The figures and names the pages state that
the code holds are checked in tests/test_docs_facts.py; the generated pages (arguments,
accelerators) by their generators' tests."""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
    )


def test_site_builds_strictly(tmp_path):
    built = build(REPO / "mkdocs.yml", tmp_path)
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (tmp_path / "index.html").is_file()


@pytest.mark.parametrize(
    "link",
    ["[x](capacity.md#how-the-timers-combine)", "[x](no-such-page.md)", "[x](#no-such-heading)"],
)
def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path, link):
    """mkdocs reports a missing anchor at INFO by default, which --strict lets pass: the
    validation settings in mkdocs.yml make it a warning."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + f"\n{link}\n")
    built = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    target = link[link.index("(") + 1 : -1]
    warned = [line for line in built.stderr.splitlines() if line.startswith("WARNING")]
    assert built.returncode != 0 and len(warned) == 1 and target in warned[0], built.stderr


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
