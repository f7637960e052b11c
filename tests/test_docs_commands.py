"""Every shell block in docs/ and the README runs as written, in a fresh shell: no variable
from the test's environment, the repository root as the working directory. The blocks that
need a GKE project (``kubectl``, ``gcloud``) are listed by what they call, so a new block is
either run here or shows up in that list. ``make test`` is this run itself; ``make demo`` is
run, with what it must print, by ``tests/dags/test_quickstart.py``; ``docker compose`` lines
and ``make compose-images`` need a Docker engine, and ``tests/compose/`` runs the README's
(``tests/support/compose_stack.py`` reads them from it)."""

from __future__ import annotations

import re

import pytest

from harness import reaper
from harness.real_cluster.control_plane import CLUSTER_DIR_ENV
from tests.support.docs_pages import PAGES, REPO
from tests.support.fresh_shell import fresh_shell

SHELL = ("bash", "sh", "shell")
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
NEEDS_GKE = re.compile(r"^\s*(kubectl|gcloud)\b", re.M)
# This run; tests/dags/test_quickstart; tests/compose.
THIS_RUN = re.compile(r"^(make (test|demo|compose-images)|docker compose)\b.*$", re.M)


def blocks() -> dict[str, list[str]]:
    """Each distinct shell block (without ``make test``) -> the pages that show it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for n, (lang, code) in enumerate(FENCE.findall(page.read_text())):
            if lang in SHELL:
                code = THIS_RUN.sub("", code).strip()
                found.setdefault(code, []).append(f"{page.relative_to(REPO)}#{n}")
    return found


def commands(code: str) -> frozenset[str]:
    """A block's command lines, without comments."""
    return frozenset(c for line in code.splitlines() if (c := line.split("#", 1)[0].strip()))


BLOCKS = blocks()
RUNNABLE = {code: where for code, where in BLOCKS.items() if code and not NEEDS_GKE.search(code)}
# A block whose every command another block runs too (docs/multicluster.md's `make cluster
# WORKERS=2`, in docs/testing.md's block) is run there: three clusters started once, not twice.
COVERED = {
    code: next(other for other in RUNNABLE if commands(code) < commands(other))
    for code in RUNNABLE
    if any(commands(code) < commands(other) for other in RUNNABLE)
}


def test_make_dags_test_runs_the_named_dag_as_make_demo_runs_the_quickstart():
    """The docs name it with a placeholder; ``make demo`` is the same script, run for real."""
    status, shown = fresh_shell("make -n dags-test DAG=multislice_tpu")
    assert status == 0, shown
    assert "bash scripts/demo.sh multislice_tpu" in shown, shown


def test_make_dags_test_gives_conf_to_airflow_dags_test(tmp_path):
    """``make dags-test DAG=<id> CONF='{...}'``, as docs/local-backend.md shows it, reaches
    ``airflow dags test --conf`` whole. The ``airflow`` here is a stand-in that prints its
    arguments (``VENV`` names its folder); tests/dags/test_examples.py runs the real one."""
    stand_in = tmp_path / "venv"
    (stand_in / "bin").mkdir(parents=True)
    airflow = stand_in / "bin" / "airflow"
    airflow.write_text('#!/bin/sh\nfor a; do printf "[%s]" "$a"; done; echo\n')
    airflow.chmod(0o755)
    (stand_in / ".installed").touch()  # make's stamp: nothing to install
    dag = "conf_reaches_airflow"
    try:
        status, shown = fresh_shell(
            f'make dags-test DAG={dag} VENV={stand_in} CONF=\'{{"steps": 80, "name": "a b"}}\''
        )
    finally:
        (REPO / ".airflow" / f"{dag}.log").unlink(missing_ok=True)
    assert status == 0, shown
    assert f'[dags][test][{dag}][--conf][{{"steps": 80, "name": "a b"}}]' in shown, shown
    status, shown = fresh_shell(f"make dags-test DAG={dag} VENV={stand_in}")
    (REPO / ".airflow" / f"{dag}.log").unlink(missing_ok=True)
    assert status == 0 and f"[dags][test][{dag}]\n" in shown, shown


def test_the_blocks_that_need_gke_are_only_kubectl_and_gcloud():
    """Those blocks need a GKE project; every other one runs below."""
    gke = [where for code, where in BLOCKS.items() if NEEDS_GKE.search(code)]
    assert len(gke) == 3, gke  # gke-prerequisites.md: JobSet, a node pool, a bucket binding
    assert len(RUNNABLE) >= 2, RUNNABLE


def _tier(code: str) -> list[pytest.MarkDecorator]:
    """``make cluster`` starts the real control plane: that block is in its tier."""
    return [pytest.mark.real_cluster] if re.search(r"^make cluster\b", code, re.M) else []


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "code",
    [
        pytest.param(code, id=where[0], marks=_tier(code))
        for code, where in RUNNABLE.items()
        if code not in COVERED
    ],
)
def test_a_documented_command_runs_as_written_in_a_fresh_shell(code: str, tmp_path):
    if not _tier(code):
        status, out = fresh_shell(code)
        assert status == 0, out[-5000:]
        return
    # A cluster block: its state in a folder of the test's own (a developer's `make cluster`
    # is left alone); the shell and every process the cluster starts registered with a
    # reaper of the block's (each component runs in a session of its own), which stops them
    # if this run is killed, and after the block whatever `make cluster-down` did not (a
    # block cut off mid-start has recorded nothing for it).
    registry = tmp_path / "reaper"
    block_reaper = reaper.start(registry, registering=False)
    env = {CLUSTER_DIR_ENV: str(tmp_path / "cluster"), reaper.ENV: str(registry)}
    try:
        status, out = fresh_shell(code, env=env, reaper_folder=registry)
    finally:
        down, said = fresh_shell("make cluster-down", env=env)
        left = reaper.reap(registry)
        block_reaper.terminate()
        block_reaper.wait()
        assert down == 0, said[-3000:]
    assert status == 0, out[-5000:]
    assert left == [], f"make cluster-down left these running: {left}"


def test_a_block_run_inside_another_is_the_multicluster_one():
    """So that a block is never dropped unseen: each block left out runs within another."""
    assert [RUNNABLE[code][0] for code in COVERED] == ["docs/multicluster.md#3"], COVERED
