"""Fault drills on a running Airflow (api-server, scheduler, dag-processor, triggerer) whose
``kubernetes_default`` is the API emulator, with scripted pods.

- The triggerer is SIGKILLed and restarted three times over one deferred job: the job still
  succeeds, with one JobSet and the leader's value as XCom.
- ``execution_timeout`` passes (deferred and blocking): the JobSet is gone within 5 s of it.
- Two triggerers hold 20 deferred tasks (a mapped sweep). The holder first stalls past the
  health threshold: the other takes its triggers, and on resuming it must not delete their
  JobSets (Airflow 3.3 calls on_kill() on moved triggers: apache/airflow#73454). Then the
  holder is SIGKILLed mid-wait: its triggers move to the other (Airflow's triggerer HA),
  every trial succeeds with its own value and one JobSet each, and nothing is left.

The worker crash between create and defer, and API faults with dropped watches, are drilled in
``tests/operators/test_kubernetes_e2e.py``; marking a task failed or clearing it, on the real
control plane (``tests/real_cluster/test_user_actions.py``).
"""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest

from airflow_provider_jax.runtime.messages import failure_message
from harness.jobsets import disrupt_host, matching, run_forever, succeed
from harness.k8s_emulator import Emulator, PodRun, PodScript
from tests.e2e.dags.drills import DISRUPTION_DELAY, TIMEOUT, TRIALS
from tests.support.airflow_stack import AirflowStack, airflow_stack
from tests.support.jobset_schema import REPO
from tests.support.postgres import PostgresServer
from tests.support.triggerers import Triggerers

pytestmark = pytest.mark.timeout(900)

DAGS = Path(__file__).parent / "dags"
GONE_WITHIN = 5.0  # seconds, from the deadline to no JobSet
RESTARTS = 3  # kills; each new triggerer resumes the same trigger
RESULT = {"loss": 0.5, "step": 7}
TWO_TRIGGERERS = "drill_two_triggerers"
RETRY_POLICY = "drill_retry_policy"
WORKER_LOST = "drill_worker_lost"


def play(pod: PodRun) -> PodScript:
    """What each task's pods do: run until released, or forever."""
    labels = pod.labels
    if labels["dag_id"] == RETRY_POLICY:
        return retry_policy_play(pod)
    if labels["dag_id"] in ("drill_triggerer", WORKER_LOST):
        return succeed(RESULT, duration=float("inf"))(pod)
    if labels["dag_id"] == TWO_TRIGGERERS:
        return succeed({"trial": int(labels["map_index"])}, duration=float("inf"))(pod)
    return run_forever(pod)


def retry_policy_play(pod: PodRun) -> PodScript:
    """``programming_error``: host 1 raises a NameError on every try. ``disruption``: on the
    first try host 1 dies by SIGKILL, as a preempted host does; the second try succeeds."""
    if pod.labels["task_id"] == "programming_error" and pod.host_index == 1:
        trace = (
            "Traceback (most recent call last):\n"
            '  File "train.py", line 9, in train\n'
            "NameError: name 'lerning_rate' is not defined\n"
        )
        error = "NameError: name 'lerning_rate' is not defined"
        types = ["NameError", "Exception", "BaseException", "object"]
        return PodScript(exit_code=1, logs=["starting"],
                         message=failure_message(error, trace, types=types))  # fmt: skip
    if pod.labels["task_id"] == "disruption" and pod.labels["try_number"] == "1":
        return disrupt_host(1)(pod)
    return succeed(RESULT)(pod)


@pytest.fixture(scope="module")
def stack(
    k8s_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer
):
    home = tmp_path_factory.mktemp("fault-drills")
    k8s_emulator.reset()
    k8s_emulator.script(play)
    kubeconfig = k8s_emulator.kubeconfig(home / "kubeconfig.json")
    env = {
        "AIRFLOW__JAX__DEFAULT_BACKEND": "kubernetes",
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": k8s_emulator.connection(kubeconfig),
        "AIRFLOW__CORE__PARALLELISM": "8",
        # A dead triggerer's triggers go to the next one after 3 s, not the default 30 s
        # (Trigger.assign_unassigned: a triggerer whose heartbeat is older than the
        # threshold holds nothing, so a live one takes its triggers at its next loop).
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "3",
        # A worker learns its task was marked failed at its next heartbeat (default 5 s).
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
        "PYTHONPATH": str(REPO),
    }
    with airflow_stack(home, DAGS, postgres.migrated_database(), env) as running:
        yield running
    k8s_emulator.reset()


def running_jobset(
    k8s: Emulator, dag_id: str, task_id: str, timeout: float = 180, **labels: str
) -> str:
    """The name of the task's JobSet (with ``labels``: of its mapped instance) once both its
    pods run."""

    def running() -> str | None:
        ours = matching(k8s.jobsets(), dag_id=dag_id, task_id=task_id, **labels)
        names = (jobset["metadata"]["name"] for jobset in ours)
        return next((name for name in names if k8s.running_pods(name) == 2), None)

    return k8s.wait_for(running, timeout, f"{dag_id}.{task_id} {labels}'s slice to run")


def seconds_until_gone(
    k8s: Emulator, name: str, uid: str, since: float, timeout: float = 60
) -> float:
    """Seconds from ``since`` (epoch) until JobSet ``name`` with ``uid`` no longer exists. By
    uid: a cleared task's next try may already have made its own JobSet of that name."""

    def gone() -> bool:
        jobset = k8s.jobset(name)
        return jobset is None or jobset["metadata"]["uid"] != uid

    k8s.wait_for(gone, timeout, f"JobSet {name} ({uid}) to go")
    return time.time() - since


def logged_deadline(stack: AirflowStack, dag_id: str, run_id: str, task_id: str) -> float:
    """The deadline the try says it has (epoch). It counts from the try's start as the task
    sees it: after the start date in the database by however long Airflow's supervisor took
    to report the start (up to 8 s measured on two busy cores), but never before it. The
    line is logged before the JobSet is created, but reaches the log file through the
    supervisor, on its own time (once seen a moment after the JobSet was running)."""
    found = stack.wait_until(
        lambda: re.search(
            r"execution_timeout runs out at (\S+?)\.\W", stack.task_log(dag_id, run_id, task_id)
        ),
        30,
        lambda: (
            f"the try's deadline in its log:\n{stack.task_log(dag_id, run_id, task_id)[-3000:]}"
        ),
    )
    deadline = datetime.fromisoformat(found[1]).timestamp()
    started = stack.task_instance(dag_id, run_id, task_id)["start_date"]
    assert started + TIMEOUT.total_seconds() <= deadline < started + TIMEOUT.total_seconds() + 30
    return deadline


def uid_of(k8s: Emulator, name: str) -> str:
    jobset = k8s.jobset(name)
    assert jobset is not None, name
    return jobset["metadata"]["uid"]


def wait_for_a_watch(k8s: Emulator, since: float) -> None:
    """Until a JobSet watch is opened after ``since`` (monotonic): a trigger waits again."""
    k8s.wait_for(
        lambda: any(r.watch and "/jobsets" in r.path and r.at > since for r in k8s.requests),
        120,
        "the trigger to wait",
    )


def wait_for_its_trigger(k8s: Emulator, name: str) -> None:
    """Until the trigger of JobSet ``name`` runs: it follows the leader's log."""
    k8s.wait_for(lambda: followed_since(k8s, name, 0.0), 120, f"the trigger of {name} to start")


def test_a_triggerer_killed_three_times_loses_nothing(stack: AirflowStack, k8s_emulator: Emulator):
    k8s = k8s_emulator
    stack.wait_for_dag("drill_triggerer")
    run_id = stack.trigger("drill_triggerer")
    name = running_jobset(k8s, "drill_triggerer", "train")
    stack.wait_for_state("drill_triggerer", run_id, "train", {"deferred"})
    restarted = 0.0  # the first triggerer started with the stack
    for kill in range(RESTARTS):
        wait_for_a_watch(k8s, restarted)
        stack.kill("triggerer", signal.SIGKILL)
        assert k8s.jobset(name) is not None, f"kill {kill + 1}: the JobSet went with the triggerer"
        restarted = time.monotonic()
        stack.start("triggerer")
    wait_for_a_watch(k8s, restarted)
    k8s.release()  # the job ends while the fourth triggerer process waits on it
    stack.wait_for_state("drill_triggerer", run_id, "train", {"success", "failed"})
    ti = stack.task_instance("drill_triggerer", run_id, "train")
    assert (ti["state"], ti["try_number"]) == ("success", 1), stack.logs("triggerer")
    assert stack.xcoms("drill_triggerer", "train")[run_id] == RESULT
    assert len(matching(k8s.submitted, dag_id="drill_triggerer")) == 1
    assert k8s.jobset(name) is None  # on_finish_action=delete_jobset


def test_execution_timeout_deletes_the_jobset_within_5s(
    stack: AirflowStack, k8s_emulator: Emulator
):
    k8s, dag_id = k8s_emulator, "drill_timeouts"
    stack.wait_for_dag(dag_id)
    run_id = stack.trigger(dag_id)
    names = {t: running_jobset(k8s, dag_id, t) for t in ("timeout_deferred", "timeout_blocking")}
    uids = {task_id: uid_of(k8s, name) for task_id, name in names.items()}
    late = {}
    for task_id, name in names.items():
        deadline = logged_deadline(stack, dag_id, run_id, task_id)
        late[task_id] = seconds_until_gone(k8s, name, uids[task_id], deadline, timeout=120)
    print(f"seconds from the deadline to no JobSet: {late}")
    assert all(t <= GONE_WITHIN for t in late.values()), late
    for task_id in names:
        ti = stack.wait_for_state(dag_id, run_id, task_id, {"success", "failed", "up_for_retry"})
        assert ti["state"] == "failed", task_id
    assert len(matching(k8s.submitted, dag_id=dag_id)) == 2


def trigger_holders(stack: AirflowStack, dag_id: str, run_id: str) -> dict[int, int | None]:
    """``{map_index: triggerer job id}`` of the run's deferred tasks."""
    rows = stack.query(
        "SELECT ti.map_index, t.triggerer_id FROM task_instance ti"
        " JOIN trigger t ON t.id = ti.trigger_id"
        " WHERE ti.dag_id = :dag_id AND ti.run_id = :run_id AND ti.state = 'deferred'",
        dag_id=dag_id,
        run_id=run_id,
    )
    return dict(rows)


def test_two_triggerers_one_killed_mid_wait_lose_nothing(
    stack: AirflowStack, k8s_emulator: Emulator
):
    k8s, dag_id = k8s_emulator, TWO_TRIGGERERS
    stack.wait_for_dag(dag_id)
    triggerers = Triggerers(stack)
    try:
        run_id = stack.trigger(dag_id)
        trials = range(TRIALS)
        names = {i: running_jobset(k8s, dag_id, "trial", 240, map_index=str(i)) for i in trials}
        for name in names.values():
            wait_for_its_trigger(k8s, name)
        stack.wait_until(
            lambda: (
                (h := trigger_holders(stack, dag_id, run_id)).keys() == set(trials)
                and all(h.values())
            ),
            120,
            "every trial to be deferred to a triggerer",
        )
        # 1. A lapse, not a death: the holder stops for longer than the health threshold, the
        # other takes its triggers, and when it resumes Airflow 3.3 calls on_kill() on each
        # (apache/airflow#73454). The tasks are still deferred, so every JobSet must stay.
        lapsed, moved = stop_the_holder(stack, triggerers, dag_id, run_id)
        other = next(name for name in triggerers.jobs if name != lapsed)
        wait_until_held_by(stack, triggerers, other, run_id)
        os.killpg(stack.procs[lapsed].pid, signal.SIGCONT)
        stack.wait_until(
            lambda: all(
                "another triggerer took this trigger over"
                in trigger_log(stack, triggerers, run_id, i, lapsed)
                for i in moved
            ),
            60,
            f"{lapsed} to let its moved triggers go",
        )
        assert not [d for d in k8s.controller.deletions if d[0] in names.values()]
        print(f"{lapsed} lapsed: {len(moved)} triggers moved, every JobSet kept")

        # 2. A death: SIGKILL the holder mid-wait; the other takes its triggers over.
        victim, moved = stop_the_holder(stack, triggerers, dag_id, run_id)
        survivor = next(name for name in triggerers.jobs if name != victim)
        killed = time.monotonic()
        stack.kill(victim, signal.SIGKILL)
        os.killpg(stack.procs[survivor].pid, signal.SIGCONT)
        wait_until_held_by(stack, triggerers, survivor, run_id)
        reassigned = time.monotonic() - killed
        # Taken over: each moved trigger runs again, following its leader's log anew; or it
        # never stopped there (the survivor still ran it while the database, after a heartbeat
        # lapse, had briefly given it to the victim: Airflow then leaves it running).
        k8s.wait_for(
            lambda: all(
                followed_since(k8s, names[i], killed)
                or still_running(trigger_log(stack, triggerers, run_id, i, survivor))
                for i in moved
            ),
            60,
            "the moved triggers to run",
        )
        resumed = time.monotonic() - killed
        print(
            f"take-over of {len(moved)} triggers after SIGKILL: reassigned after"
            f" {reassigned:.1f} s, all running again after {resumed:.1f} s"
        )
        assert all(k8s.jobset(name) is not None for name in names.values())

        k8s.release()  # every trial ends while the survivor waits on it
        runs = stack.wait_for_runs(dag_id, 1, timeout=240)
        assert [r["state"] for r in runs] == ["success"], stack.logs(survivor)
        tries = stack.query(
            "SELECT map_index, state, try_number FROM task_instance"
            " WHERE dag_id = :dag_id AND run_id = :run_id",
            dag_id=dag_id,
            run_id=run_id,
        )
        assert sorted(tries) == [(i, "success", 1) for i in trials]
        values = stack.query(
            "SELECT map_index, value FROM xcom WHERE dag_id = :dag_id AND run_id = :run_id"
            " AND key = 'return_value'",
            dag_id=dag_id,
            run_id=run_id,
        )
        assert dict(values) == {i: {"trial": i} for i in trials}
        submitted = matching(k8s.submitted, dag_id=dag_id)
        assert sorted(int(j["metadata"]["labels"]["map_index"]) for j in submitted) == list(trials)
        k8s.wait_for(lambda: not matching(k8s.jobsets(), dag_id=dag_id), 30, "every JobSet to go")
        assert reassigned < 30, "the survivor took the triggers only after 30 s"
    finally:
        triggerers.stop_second()


def stop_the_holder(
    stack: AirflowStack, triggerers: Triggerers, dag_id: str, run_id: str
) -> tuple[str, list[int]]:
    """SIGSTOP both triggerers (who holds what changes while they run), then SIGCONT all but
    the one holding the most triggers: its name and the trials it holds."""
    for name in triggerers.jobs:
        os.killpg(stack.procs[name].pid, signal.SIGSTOP)  # with its trigger runner
    by_name = {
        i: triggerers.name_of(job) for i, job in trigger_holders(stack, dag_id, run_id).items()
    }
    counts = {name: list(by_name.values()).count(name) for name in triggerers.jobs}
    holder = max(counts, key=counts.__getitem__)
    print(f"triggers held: {counts}; stopping {holder}")
    for name in triggerers.jobs:
        if name != holder:
            os.killpg(stack.procs[name].pid, signal.SIGCONT)
    return holder, [i for i, name in by_name.items() if name == holder]


def wait_until_held_by(stack: AirflowStack, triggerers: Triggerers, name: str, run_id: str) -> None:
    job = triggerers.jobs[name]
    stack.wait_until(
        lambda: set(trigger_holders(stack, TWO_TRIGGERERS, run_id).values()) == {job},
        60,
        f"{name} to hold every trigger",
    )


def trigger_log(
    stack: AirflowStack, triggerers: Triggerers, run_id: str, map_index: int, name: str
) -> str:
    """What triggerer ``name`` logged for trial ``map_index`` (each triggerer writes its own
    file, named by its job id)."""
    path = (
        stack.home
        / "logs"
        / f"dag_id={TWO_TRIGGERERS}"
        / f"run_id={run_id}"
        / "task_id=trial"
        / f"map_index={map_index}"
        / f"attempt=1.log.trigger.{triggerers.jobs[name]}.log"
    )
    return path.read_text(errors="replace") if path.exists() else ""


def still_running(log: str) -> bool:
    """Whether a triggerer's log of a trigger shows it started and not ended."""
    return " starting" in log and "trigger completed" not in log


def followed_since(k8s: Emulator, name: str, since: float) -> bool:
    """Whether a trigger started following JobSet ``name``'s leader log after ``since``."""
    return any(r.watch and f"/pods/{name}-" in r.path and r.at > since for r in k8s.requests)


def test_the_retry_policy_fails_a_programming_error_at_once_and_retries_a_disruption(
    stack: AirflowStack,
):
    """On the running Airflow, the provider's default retry policy, and its disruption delay
    set by the DAG: the programming error fails in one try although ``retries`` is 2, naming
    the host and the error; the disruption is tried again after its delay, with the reason
    Airflow stores on the try (``retry_reason``, a column Airflow 3.3 fills on a retry only
    and its REST API does not show: read from the database), and succeeds."""
    stack.wait_for_dag(RETRY_POLICY)
    run_id = stack.trigger(RETRY_POLICY)
    finished = stack.wait_for_runs(RETRY_POLICY, 1, timeout=300)
    assert finished[0]["state"] == "failed"  # the programming error's task failed
    path = f"/api/v2/dags/{RETRY_POLICY}/dagRuns/{quote(run_id, safe='')}/taskInstances"
    failed = stack.api("GET", f"{path}/programming_error")
    assert (failed["state"], failed["try_number"]) == ("failed", 1)  # retries=2 left unused
    log = stack.task_log(RETRY_POLICY, run_id, "programming_error")
    assert "NameError" in log and "[0/1]" in log
    retried = stack.api("GET", f"{path}/disruption")
    assert (retried["state"], retried["try_number"]) == ("success", 2)
    tries = stack.api("GET", f"{path}/disruption/tries")["task_instances"]
    assert [t["state"] for t in tries] == ["failed", "success"], tries  # a try, then the next
    assert stack.xcoms(RETRY_POLICY, "disruption")[run_id] == RESULT
    [(reason, delay)] = stack.query(
        "SELECT retry_reason, retry_delay_override FROM task_instance_history "
        "WHERE dag_id = :dag AND task_id = 'disruption' AND try_number = 1",
        dag=RETRY_POLICY,
    )
    assert "disruption" in reason.lower(), reason
    assert delay == DISRUPTION_DELAY.total_seconds(), delay


def test_a_blocking_try_killed_mid_wait_is_retried_onto_the_same_jobset(
    stack: AirflowStack, k8s_emulator: Emulator
):
    """A try that waits in the worker records its JobSet in Airflow's task state store; its
    process is SIGKILLed mid-wait (no on_kill runs); the next try reads the record and
    reconnects: one JobSet for the task, and the leader's value as its XCom."""
    k8s, dag_id = k8s_emulator, WORKER_LOST
    stack.wait_for_dag(dag_id)
    run_id = stack.trigger(dag_id)
    name = running_jobset(k8s, dag_id, "train")
    uid = uid_of(k8s, name)
    where = "dag_id = :dag_id AND run_id = :run_id AND task_id = 'train'"
    recorded = stack.wait_until(
        lambda: stack.query(f"SELECT value FROM task_state_store WHERE {where} AND key = 'jobset'",
                            dag_id=dag_id, run_id=run_id),
        60,
        lambda: "the try's record in the task state store",
    )  # fmt: skip
    assert uid in recorded[0][0]
    [(ti_id,)] = stack.query(f"SELECT id FROM task_instance WHERE {where}", dag_id=dag_id,
                             run_id=run_id)  # fmt: skip
    title = f"airflow worker -- {ti_id}"  # the task runner's process title (task_runner.py)
    runners = [
        p for p in psutil.process_iter(["cmdline"]) if title in " ".join(p.info["cmdline"] or [])
    ]
    assert len(runners) == 1, runners
    runners[0].kill()
    stack.wait_until(
        lambda: "Reconnected to the JobSet of try 1" in stack.task_log(dag_id, run_id, "train", 2),
        120,
        lambda: f"try 2 to reconnect:\n{stack.task_log(dag_id, run_id, 'train', 2)[-3000:]}",
    )
    assert k8s.jobset(name)["metadata"]["uid"] == uid
    k8s.release()
    stack.wait_for_state(dag_id, run_id, "train", {"success", "failed"})
    ti = stack.task_instance(dag_id, run_id, "train")
    assert (ti["state"], ti["try_number"]) == ("success", 2)
    assert stack.xcoms(dag_id, "train")[run_id] == RESULT
    assert len(matching(k8s.submitted, dag_id=dag_id)) == 1
