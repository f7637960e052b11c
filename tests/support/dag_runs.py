"""``airflow dags test`` runs against the Kubernetes API emulator, and what they left."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.jobsets import matching
from harness.k8s_emulator import Emulator
from tests.support.airflow_home import AIRFLOW, AirflowHome

DAGS = Path(__file__).parent.parent / "operators" / "dags"
HANG_SECONDS = 280  # within pytest-timeout's 300 s, to leave time for the stacks


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    out: Path
    states: dict[str, tuple[str | None, int]]
    submitted: list[dict[str, Any]]
    left: list[dict[str, Any]]

    def received(self, name: str) -> Any:
        return json.loads((self.out / f"{name}.json").read_text())

    def created_for(self, task_id: str) -> int:
        return len(matching(self.submitted, task_id=task_id))


def env(
    home: AirflowHome, emulator: Emulator, out: Path, dags: Path = DAGS, **extra: str
) -> dict[str, str]:
    """The env of an Airflow process whose ``kubernetes_default`` is the emulator."""
    kubeconfig = emulator.kubeconfig(out / "kubeconfig.json")
    return home.env(
        dags,
        AIRFLOW_CONN_KUBERNETES_DEFAULT=emulator.connection(kubeconfig),
        JAX_TEST_OUT=str(out),
        **extra,
    )


def task_states(home: AirflowHome, dag_id: str) -> dict[str, tuple[str | None, int]]:
    """{task_id: (state, try_number)} from the metadata DB."""
    with sqlite3.connect(home.path / "airflow.db") as db:
        rows = db.execute(
            "SELECT task_id, state, try_number FROM task_instance WHERE dag_id = ?", (dag_id,)
        )
        return {task_id: (state, tries) for task_id, state, tries in rows}


def run_dag(
    home: AirflowHome, emulator: Emulator, out: Path, dag_id: str, *date: str, **env_kwargs: Any
) -> Run:
    """``airflow dags test`` (it runs triggers inline, as a triggerer would). One that hangs
    fails with its log and every thread's stack (faulthandler, on SIGABRT)."""
    argv = [*AIRFLOW, "dags", "test", dag_id, *(date or ["2024-01-01"])]
    with subprocess.Popen(
        argv,
        env={**env(home, emulator, out, **env_kwargs), "PYTHONFAULTHANDLER": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as running:
        try:
            output, _ = running.communicate(timeout=HANG_SECONDS)
        except subprocess.TimeoutExpired:
            running.send_signal(signal.SIGABRT)
            output, _ = running.communicate(timeout=30)
            raise AssertionError(
                f"{dag_id} hung past {HANG_SECONDS}s:\n{output[-20000:]}"
            ) from None
    proc = subprocess.CompletedProcess(argv, running.returncode, output)
    return Run(proc, out, task_states(home, dag_id), emulator.submitted, emulator.jobsets())


def dags_test(
    home: AirflowHome, dags: Path, dag_id: str, out: Path, timeout: float, **env_extra: str
) -> dict[str, Any]:
    """``airflow dags test`` of ``dags``' ``dag_id`` (against the real control plane where
    ``env_extra`` holds its connections): its output (also in ``out/dags-test.log``) and
    states."""
    from harness.real_cluster.control_plane import REPO

    run_env = home.env(dags, JAX_TEST_OUT=str(out), **env_extra)
    run_env["PYTHONPATH"] = f"{REPO}:{dags}"
    proc = subprocess.run(
        [*AIRFLOW, "dags", "test", dag_id, "2024-01-01"],
        env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=timeout,
    )  # fmt: skip
    (out / "dags-test.log").write_text(proc.stdout)
    return {"proc": proc, "out": out, "states": task_states(home, dag_id)}
