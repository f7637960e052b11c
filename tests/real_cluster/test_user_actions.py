"""Marking a task failed or clearing it, as the UI does, on a running Airflow (PostgreSQL,
scheduler, triggerer, api-server) whose cluster is the real control plane: the JobSet and,
through the real garbage collector, its Jobs and pods are gone once the pods' grace period is
over (JAX's preemption service keeps a process alive past SIGTERM); the cleared
task's rerun makes a JobSet of its own and succeeds (the clear-rerun race: the old JobSet,
being deleted, must not be mistaken for the new try's)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.real_cluster.control_plane import REPO, ControlPlane
from harness.real_cluster.identities import connection
from tests.support.airflow_stack import AirflowStack, airflow_stack
from tests.support.postgres import PostgresServer
from tests.support.statsd_listener import StatsdListener

pytestmark = pytest.mark.timeout(600)
DAGS = Path(__file__).parent / "dags"
GRACE_S = 5  # the drill's termination_grace_period (tests/real_cluster/dags/real_drills.py)
# Seconds from the action to no JobSet or Jobs. The latency target (5 s) is the emulator's
# drill; here two cores also run six JAX processes and the control plane, and the triggerer's
# main loop was seen stalled for 11-15 s ("Heartbeat recovered after 15.63 seconds") while
# triggers started (measured, the three actions together: 6.2 s blocking, 8.1 s deferred,
# 8.2 s cleared, with the drill's 5 s grace period).
GONE_WITHIN = 60.0
PREFIXES = {
    "JobSet": "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets",
    "Job": "/apis/batch/v1/namespaces/default/jobs",
    "Pod": "/api/v1/namespaces/default/pods",
}


def stack_env(plane: ControlPlane, gates: Path, **extra: str) -> dict[str, str]:
    """A drill's Airflow: the real cluster as its connection, the drill DAGs' gates, and a
    triggerer that learns of a user's action within a second or two."""
    return {
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": connection(plane.kubeconfig()),
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "3",
        "JAX_TEST_GATES": str(gates),
        "PYTHONPATH": f"{REPO}:{DAGS}",
        **extra,
    }


def objects(plane: ControlPlane, kind: str, task: str) -> list[dict]:
    items = plane.api().get(PREFIXES[kind])["items"]
    return [i for i in items if i["metadata"]["name"].startswith(task.replace("_", "-") + "-")]


def wait(what: str | Callable[[], str], check: Callable[[], Any], timeout: float = 180) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise AssertionError(
        f"{what() if callable(what) else what} did not happen within {timeout:.0f} s"
    )


def running(plane: ControlPlane, task: str) -> str:
    def both_pods_run():
        pods = objects(plane, "Pod", task)
        ok = len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)
        return ok and objects(plane, "JobSet", task)[0]["metadata"]["uid"]

    return wait(f"{task}'s pods to run", both_pods_run)


def trigger_started(stack: AirflowStack, task: str, dag_id: str = "real_user_actions") -> bool:
    """Whether the triggerer runs ``task``'s trigger (its part of the task log says so)."""
    logs = stack.home / "logs" / f"dag_id={dag_id}"
    return any(" starting" in p.read_text() for p in logs.glob(f"*/task_id={task}/*.trigger.*"))


def seconds_until_gone(plane: ControlPlane, acted: dict[str, tuple[str, float]]) -> dict:
    """Seconds from each task's action to no JobSet (with its uid) and no Jobs of it: the
    actions come together, as a user's may, and their grace periods run at once."""
    took: dict[str, float] = {}

    def all_gone() -> bool:
        for task, (uid, since) in acted.items():
            if task in took:
                continue
            jobsets = [j for j in objects(plane, "JobSet", task) if j["metadata"]["uid"] == uid]
            jobs = [
                j
                for j in objects(plane, "Job", task)
                if any(o.get("uid") == uid for o in j["metadata"].get("ownerReferences", []))
            ]
            if not jobsets and not jobs:
                took[task] = time.time() - since
        return len(took) == len(acted)

    wait(
        lambda: f"the JobSets and Jobs of {sorted(set(acted) - set(took))} to go (gone: {took})",
        all_gone,
        GONE_WITHIN,
    )
    return took


def test_marking_failed_or_clearing_deletes_the_slice(
    real_cluster: ControlPlane, tmp_path_factory, postgres: PostgresServer
):
    home, gates = tmp_path_factory.mktemp("real-actions"), tmp_path_factory.mktemp("gates")
    env = stack_env(
        real_cluster,
        gates,
        AIRFLOW__CORE__PARALLELISM="8",
        # As the emulator's drills run it (tests/e2e/test_fault_drills.py): the worker too
        # learns of a user's action within a second or two.
        AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL="1",
    )
    with airflow_stack(home, DAGS, postgres.migrated_database(), env) as stack:
        dag_id = "real_user_actions"
        stack.wait_for_dag(dag_id)
        run_id = stack.trigger(dag_id)
        tasks = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
        uids = {
            t: running(real_cluster, t) for t in ("failed_deferred", "failed_blocking", "cleared")
        }
        # Act once the triggerer runs each deferred task's trigger. Before that, Airflow has
        # nothing to cancel and calls no on_kill(): a task marked failed then leaves its
        # JobSet to its activeDeadlineSeconds (docs/recovery.md). This triggerer has been
        # seen stalled for 15 s on two cores, with the tasks already deferred.
        for task_id in ("failed_deferred", "cleared"):
            stack.wait_for_state(dag_id, run_id, task_id, {"deferred"})
            wait(f"{task_id}'s trigger to start", lambda t=task_id: trigger_started(stack, t))
        acted = {}
        for task_id in ("failed_deferred", "failed_blocking"):
            acted[task_id] = (uids[task_id], time.time())
            stack.api("PATCH", f"{tasks}/{task_id}", {"new_state": "failed"})
        acted["cleared"] = (uids["cleared"], time.time())
        stack.api(
            "POST",
            f"/api/v2/dags/{dag_id}/clearTaskInstances",
            {"dry_run": False, "dag_run_id": run_id, "task_ids": ["cleared"], "only_failed": False},
        )
        took = seconds_until_gone(real_cluster, acted)
        print(f"seconds from the user action to no JobSet and no Jobs: {took}")
        assert all(t <= GONE_WITHIN for t in took.values()), took

        rerun = running(real_cluster, "cleared")  # a JobSet of its own
        assert rerun != uids["cleared"]
        (gates / "cleared").touch()
        ti = stack.wait_for_state(dag_id, run_id, "cleared", {"success", "failed"})
        assert (ti["state"], ti["try_number"]) == ("success", 2), stack.logs("scheduler")[-3000:]
        wait("every pod to go", lambda: not real_cluster.api().get(PREFIXES["Pod"])["items"], 90)


def test_a_task_marked_failed_before_any_triggerer_ran_its_trigger_loses_its_slice(
    real_cluster: ControlPlane, tmp_path_factory, postgres: PostgresServer
):
    """Airflow cancels only running triggers. Here no triggerer runs: the task is marked
    failed, a triggerer's clean-up (``Trigger.clean_unused``, which each loop of a
    live triggerer runs) drops its trigger, and no ``on_kill()`` ever runs. The next
    triggerer's shared watch sweeps the namespace and deletes that JobSet, and only that one:
    the other task's, still deferred, runs on to success."""
    home, gates = tmp_path_factory.mktemp("real-orphans"), tmp_path_factory.mktemp("gates")
    statsd = StatsdListener()  # the metrics, as a StatsD server gets them (docs/metrics.md)
    env = stack_env(real_cluster, gates, **statsd.env())
    with airflow_stack(home, DAGS, postgres.migrated_database(), env) as stack:
        dag_id = "real_orphans"
        stack.wait_for_dag(dag_id)
        run_id = stack.trigger(dag_id)
        uids = {t: running(real_cluster, t) for t in ("abandoned", "kept")}
        for task_id in uids:
            stack.wait_for_state(dag_id, run_id, task_id, {"deferred"})
            wait(f"{task_id}'s trigger", lambda t=task_id: trigger_started(stack, t, dag_id))
        stack.kill("triggerer", signal.SIGKILL)  # no trigger runs anywhere now
        tasks = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
        stack.api("PATCH", f"{tasks}/abandoned", {"new_state": "failed"})
        clean = "from airflow.models.trigger import Trigger; Trigger.clean_unused()"
        subprocess.run([sys.executable, "-c", clean], env=stack.env, check=True, timeout=120)
        acted = time.time()
        stack.start("triggerer")

        def abandoned_gone() -> bool:
            return not [
                j for j in objects(real_cluster, "JobSet", "abandoned")
                if j["metadata"]["uid"] == uids["abandoned"]
            ]  # fmt: skip

        wait("the abandoned JobSet to go", abandoned_gone, GONE_WITHIN + 60)
        print(f"seconds from the action to the abandoned JobSet gone: {time.time() - acted:.1f}")
        kept = objects(real_cluster, "JobSet", "kept")
        assert [j["metadata"]["uid"] for j in kept] == [uids["kept"]]
        assert stack.task_instance(dag_id, run_id, "kept")["state"] == "deferred"
        (gates / "kept").touch()
        ti = stack.wait_for_state(dag_id, run_id, "kept", {"success", "failed"})
        assert ti["state"] == "success", stack.logs("triggerer")[-3000:]
    # The worker's, for the try that finished, and the triggerer's, of what it held.
    for name in ("job.goodput", "job.queue_wait", "job.startup", "job.host_seconds_lost"):
        assert statsd.wait_for(lambda n=name: statsd.named(f"airflow.jax.{n}")), statsd.lines
    waiting = [line.split(":")[1] for line in statsd.named("airflow.jax.triggerer.waiting_jobsets")]
    assert "1|g" in waiting and waiting[-1] == "0|g", statsd.lines
    assert statsd.named("airflow.jax.triggerer.watch_relists"), statsd.lines
    statsd.close()
