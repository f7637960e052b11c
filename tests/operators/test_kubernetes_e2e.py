"""The kubernetes backend end to end: real Airflow (``airflow dags test``, triggers run inline)
against the Kubernetes API emulator, through the provider's own hooks and connection: scripted
pods, API faults, a worker killed mid-wait. A job's plain life with real JAX pods, and a
kill that deletes the slice, are the real control plane's (``tests/real_cluster``)."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_jax.runtime.call import decode_call
from airflow_provider_jax.runtime.data_paths import MARKER
from harness.gcs_emulator import GcsEmulator
from harness.jobsets import fail_host, run_forever, succeed
from harness.k8s_emulator import Emulator, Faults, PodRun, PodScript
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import DAGS, Run, env, run_dag

# `airflow dags test` against the emulator, pods as processes: make check skips it.
pytestmark = pytest.mark.slow

DAG_FILE = DAGS / "kubernetes_dags.py"
DATA_BUCKET = "e2e-data"

SCRIPTS = {
    "deferred": succeed({"loss": 0.25, "step": 3}),
    "blocking": succeed({"loss": 0.5, "step": 4}),
    "outputs": succeed({"loss": 0.125, "step": 9}),
    "fails": fail_host(1),
    "timeout_deferred": run_forever,
    "timeout_blocking": run_forever,
    "train": succeed({"loss": 1.5}, duration=1),
    "data": succeed("trained on the data set"),
}


def play(pod: PodRun) -> PodScript:
    task_id = pod.labels["task_id"]
    if task_id == "retried":  # the first try's JobSet fails; the retry's succeeds
        return (fail_host(1) if pod.labels["try_number"] == "1" else succeed("second try"))(pod)
    return SCRIPTS[task_id](pod)


@pytest.fixture(scope="module")
def e2e(
    k8s_emulator: Emulator,
    airflow_home: AirflowHome,
    tmp_path_factory: pytest.TempPathFactory,
    gcs_emulator: GcsEmulator,
) -> Run:
    """One run of a DAG whose tasks cover success (both modes), multiple_outputs, failure,
    retry after failure, execution_timeout (both modes) and a local Data folder."""
    k8s_emulator.reset()
    k8s_emulator.script(play)
    gcs_emulator.create_bucket(DATA_BUCKET)
    out = tmp_path_factory.mktemp("e2e")
    return run_dag(airflow_home, k8s_emulator, out, "jax_k8s_e2e", JAX_TEST_BUCKET=DATA_BUCKET)


def test_downstream_tasks_receive_the_leaders_value_in_both_modes(e2e: Run):
    assert e2e.states["deferred"][0] == e2e.states["blocking"][0] == "success", e2e.proc.stdout[
        -3000:
    ]
    assert e2e.received("deferred") == {"loss": 0.25, "step": 3}
    assert e2e.received("blocking") == {"loss": 0.5, "step": 4}


def test_the_jobset_is_named_in_xcom_before_the_wait(e2e: Run, airflow_home: AirflowHome):
    with sqlite3.connect(airflow_home.path / "airflow.db") as db:
        rows = db.execute(
            "SELECT key, value FROM xcom WHERE dag_id = 'jax_k8s_e2e' AND task_id = 'deferred'"
        ).fetchall()
    xcom = {key: json.loads(value) for key, value in rows}
    assert xcom["jobset_namespace"] == "default"
    assert xcom["jobset_name"].startswith("deferred-")
    assert xcom["jobset_name"] in {m["metadata"]["name"] for m in e2e.submitted}


def test_a_local_data_folder_is_in_gcs_before_its_jobset(e2e: Run, gcs_emulator: GcsEmulator):
    assert e2e.states["data"][0] == "success", e2e.proc.stdout[-3000:]
    staged = gcs_emulator.object_names(DATA_BUCKET, "airflow-jax-data/")
    assert [n for n in staged if n.endswith("/train.csv")] and [
        n for n in staged if n.endswith(".complete")
    ], staged
    (jobset,) = [j for j in e2e.submitted if j["metadata"]["labels"]["task_id"] == "data"]
    assert "Uploading Data(" in e2e.proc.stdout
    container = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value", "") for e in container["containers"][0]["env"]}
    marker = decode_call(env)["kwargs"]["dataset"][MARKER]  # what the pods read: the copy
    digest = next(n for n in staged if n.endswith(".complete")).split("/")[1].split(".")[0]
    assert marker["uri"] == f"gs://{DATA_BUCKET}/airflow-jax-data/{digest}/"


def test_multiple_outputs_split_the_leaders_dict(e2e: Run):
    assert e2e.received("outputs_loss") == 0.125


def test_a_failed_jobset_shows_the_failing_hosts_traceback(e2e: Run):
    assert e2e.states["fails"][0] == "failed"
    log = e2e.proc.stdout
    assert "JaxCodeError" in log  # a bug: failed at once with restarts to spare
    assert "FailJobSetFailurePolicyAction" in log and "restarts 0/3" in log
    assert "[0/1] ValueError: loss is NaN at step 3" in log
    assert "ValueError: loss is NaN at step 3 on [0/1]" in log  # the traceback tail
    assert "last lines of its log" in log


def test_a_retry_after_failure_creates_exactly_one_new_jobset(e2e: Run):
    assert e2e.states["retried"] == ("success", 2)
    assert e2e.created_for("retried") == 2  # one per try, the first deleted before the second


def test_execution_timeout_deletes_the_jobset_in_both_modes(e2e: Run):
    assert e2e.states["timeout_deferred"][0] == e2e.states["timeout_blocking"][0] == "failed"
    assert e2e.created_for("timeout_deferred") == e2e.created_for("timeout_blocking") == 1
    # Both at the deadline counted from the try's start, by the wait itself: Airflow's alarm
    # (from execute's start, later) never fired in the blocking one.
    assert e2e.proc.stdout.count("was deleted: the task's execution_timeout passed") == 2
    assert "Timeout, PID" not in e2e.proc.stdout


def test_nothing_is_left_behind(e2e: Run, k8s_emulator: Emulator):
    assert e2e.left == []  # on_finish_action=delete_jobset, whatever the outcome
    assert k8s_emulator.running_pods() == 0
    assert all(m["metadata"]["labels"]["app.kubernetes.io/managed-by"] for m in e2e.submitted)


def test_api_faults_at_20_percent_fail_no_task(
    k8s: Emulator, airflow_home: AirflowHome, tmp_path: Path
):
    """429/500/503, resets before and after the server acted, watches dropped every second
    and history compacted: both modes still succeed, with one JobSet each."""
    slow = {"deferred": succeed(1, duration=3), "blocking": succeed(2, duration=3)}
    k8s.script(lambda pod: slow[pod.labels["task_id"]](pod))
    k8s.faults = Faults(rate=0.2, latency=0.05, drop_watch_after=1.0, expire_rate=0.3, seed=8)
    run = run_dag(airflow_home, k8s, tmp_path, "jax_k8s_pair")
    assert run.states["deferred"][0] == run.states["blocking"][0] == "success", run.proc.stdout[
        -3000:
    ]
    assert (run.received("deferred"), run.received("blocking")) == (1, 2)
    assert run.created_for("deferred") == run.created_for("blocking") == 1
    faults = [r for r in k8s.requests if r.status != "ok"]
    assert len(faults) >= 3, f"{len(faults)} faults in {len(k8s.requests)} requests"


def test_a_retry_after_a_worker_crash_reattaches(
    k8s: Emulator, airflow_home: AirflowHome, tmp_path: Path
):
    """SIGKILL the worker once its JobSet runs; running the same task instance again picks
    the JobSet up where it is, and never submits a second one."""
    k8s.script(succeed({"loss": 1.5}, duration=math.inf))
    driver = [sys.executable, str(DAG_FILE), "jax_k8s_one"]
    crashed = subprocess.Popen(driver, env=env(airflow_home, k8s, tmp_path), start_new_session=True)
    try:
        k8s.wait_for(lambda: k8s.running_pods() == 2, 120, "the slice to run")
    finally:
        os.killpg(crashed.pid, signal.SIGKILL)
        crashed.wait()
    assert len(k8s.jobsets()) == 1
    restarted = time.monotonic()
    retry = subprocess.Popen(
        driver, env=env(airflow_home, k8s, tmp_path), stdout=subprocess.PIPE, text=True
    )
    try:
        k8s.wait_for(
            lambda: any(r.watch and r.at > restarted for r in k8s.requests),
            120,
            "the retry to wait",
        )
        k8s.release()
        stdout, _ = retry.communicate(timeout=120)
    finally:
        retry.kill()
    assert "Reattaching to JobSet" in stdout, stdout[-3000:]
    assert json.loads((tmp_path / "train.json").read_text()) == {"loss": 1.5}
    assert len(k8s.submitted) == 1
    assert k8s.jobsets() == []
