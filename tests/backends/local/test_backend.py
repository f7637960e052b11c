"""The local backend running real multi-process JAX jobs, and its failure drills.

JAX start-up is the cost here (seconds per process on two cores), so the programs are tiny and
the drills that do not need JAX run with ``initialize_distributed=False``.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowTaskTimeout

from airflow_provider_jax.backends.local.localize import localize
from airflow_provider_jax.exceptions import JaxCodeError, JaxJobFailed, JaxResultError
from airflow_provider_jax.reporting.host_logs import SUMMARY_HEADER
from harness.processes import wait_gone
from tests.support.jobset_schema import REPO
from tests.support.local_runs import LOG, manifest, operator, run, run_outcome


@pytest.fixture(autouse=True)
def _info_logs(caplog):
    caplog.set_level(logging.INFO, logger=LOG.name)


@pytest.mark.parametrize(
    ("accelerator", "num_slices", "places"),
    [
        ("tpu-v6e-8", 1, [[0, 0, 0], [1, 0, 1]]),  # 2x4 as xpk lays it out: 2 VMs x 4 chips
        ("tpu7x-16", 1, [[0, 0, 0], [1, 0, 1]]),  # Ironwood 2x2x2: 2 VMs x 4 chips
        ("tpu-v5litepod-16", 1, [[0, 0, 0], [1, 0, 1], [2, 0, 2], [3, 0, 3]]),
        # Multislice: slice-major process ids, MEGASCALE_SLICE_ID per slice.
        ("tpu-v5litepod-8", 2, [[0, 0, 0], [1, 0, 1], [2, 1, 0], [3, 1, 1]]),
    ],
    ids=["v6e-2x4", "tpu7x-2x2x2", "4-processes", "2-slices"],
)
def test_multi_process_jax(caplog, accelerator, num_slices, places):
    # A few seconds each. A process that outlived its own success by 150 s once hid here (a
    # Gloo connection left to time out in XLA's teardown; runtime/main.py): a run that long
    # fails now, with the backend's own timeout error.
    result, report = run("collective", timeout_s=60, accelerator=accelerator, num_slices=num_slices)
    processes, local_devices = len(places), 4
    assert result["process_index"] == 0  # only the leader's value comes back
    assert result["process_count"] == processes
    assert result["device_count"] == processes * local_devices  # the slices' chips
    assert result["local_device_count"] == local_devices
    assert result["total"] == local_devices * processes * (processes + 1) / 2
    assert result["places"] == places
    assert report == {"step": 1, "total": result["total"], "process": 0}
    assert f"[0/0] step 1: process=0 total={result['total']:g}" in caplog.messages
    assert not any("step 1:" in m for m in caplog.messages if not m.startswith("[0/0]"))
    assert not any("peer ranks" in m for m in caplog.messages)  # Gloo's connection reports


def test_a_dynamically_sliced_job_runs_locally_as_its_hosts():
    """The local backend runs what GKE would carve (a tpu7x sub-slice here) as that many
    hosts; the Kueue queue it names is Kubernetes' to honour."""
    result, _ = run(
        "collective", timeout_s=60, accelerator="tpu7x-2x2x2", dynamic_slicing=True,
        queue_name="tpu7x",
    )  # fmt: skip
    assert (result["process_count"], result["places"]) == (2, [[0, 0, 0], [1, 0, 1]])


def test_a_failed_run_leaves_no_result_json(tmp_path):
    """The leader returned, but host 1 failed: nothing may read its value as the result."""
    with pytest.raises(JaxJobFailed, match="late boom from process 1"):
        run("leader_returns_then_host_fails", output_dir=str(tmp_path), timeout_s=120)
    assert not (tmp_path / "result.json").exists()


def test_a_failing_host_fails_the_job_with_its_traceback(caplog):
    with pytest.raises(JaxJobFailed) as failed:
        run("fail_on", entrypoint_kwargs={"process": 1})
    message = str(failed.value)
    assert "[0/1] ValueError: boom from process 1" in message
    assert 'raise ValueError(f"boom from process {process}")' in message
    assert [f.tag for f in failed.value.failures if "boom" in f.error] == ["[0/1]"]
    # One block, cause first: the host's error, what failed and how, then its traceback.
    headline, summary = message.splitlines()[:2]
    assert headline == "[0/1] ValueError: boom from process 1"
    assert summary == "JAX job job failed (PodFailurePolicy: a code error, no restart)"
    assert message.count("ValueError: boom from process 1") == 2  # its line, its traceback's
    # Nothing told twice: the error shows host 1, and the leader's lines were all streamed.
    assert SUMMARY_HEADER not in caplog.messages


def test_the_hosts_the_task_log_did_not_show_close_the_error(caplog):
    with pytest.raises(JaxJobFailed) as failed:
        run("fail_on", entrypoint_kwargs={"process": 1}, stream_logs="none")
    lines = str(failed.value).splitlines()
    others = lines[lines.index(SUMMARY_HEADER) + 1 :]  # last, after the cause
    assert [m.split(" ", 1)[0] for m in others] == ["[0/0]"]  # host 1 is the cause, above
    assert lines[0] == "[0/1] ValueError: boom from process 1"
    assert not any("Traceback" in m for m in caplog.messages)  # once, in the error


def test_a_failed_leaders_traceback_is_in_the_error_only(caplog):
    """The leader's lines are streamed, but not its failure's traceback: the error shows it,
    once, cause first, and the other host's "another task died" lines come last."""
    with pytest.raises(JaxJobFailed) as failed:
        run("fail_on", entrypoint_kwargs={"process": 0})
    message = str(failed.value)
    assert message.splitlines()[0] == "[0/0] ValueError: boom from process 0"
    assert message.count("Traceback (most recent call last)") == 1
    assert not any("Traceback" in m or "boom" in m for m in caplog.messages), caplog.messages
    if SUMMARY_HEADER in message:  # host 1 stopped after it, if its lines came in time
        assert message.index(SUMMARY_HEADER) > message.index("Traceback")


@pytest.mark.parametrize(
    ("stream_logs", "shown"),
    [("leader", ["[0/0]"]), ("all", ["[0/0]", "[0/1]"]), ("none", [])],
)
def test_stream_logs_picks_whose_lines_the_task_log_shows(caplog, stream_logs, shown):
    run("hello", initialize_distributed=False, stream_logs=stream_logs)
    hellos = sorted(m.split(" ", 1)[0] for m in caplog.messages if "hello from process" in m)
    assert hellos == shown


def test_a_lost_host_restarts_the_whole_set_and_is_named_as_the_cause(caplog):
    """Host 1 is SIGKILLed; host 0 then fails in a collective (a lost peer, exit 42). The
    restart names host 1, the one that failed first, as a disruption."""
    result, _ = run("killed_on_first_attempt", max_restarts=1)
    assert result["restart_attempt"] == 1
    assert result["process_count"] == 2
    restarted = [m for m in caplog.messages if m.startswith("job: restart")]
    assert restarted == ["job: restart 1/1 after a disruption on [0/1]: killed by SIGKILL"]


def test_a_host_that_reported_its_error_is_the_cause_though_a_peer_ended_first(tmp_path):
    """Host 1 raised and its runtime reported it, but it was still in its exit when host 0
    ended on the lost connection: host 1's error is the cause (a code error, no restart),
    as on Kubernetes, where a pod's termination message is read however it ended. Host 1
    never ends on its own (the test's timeout fails a run that waits for it)."""
    with pytest.raises(JaxCodeError) as raised:
        run(
            "fails_while_its_peer_is_still_exiting",
            max_restarts=3,
            initialize_distributed=False,
            entrypoint_kwargs={"marker": str(tmp_path / "reported")},
        )
    assert "no restart" in raised.value.summary
    assert str(raised.value).splitlines()[0] == "[0/1] ValueError: a bug on process 1"
    assert [f.tag for f in raised.value.failures] == ["[0/1]", "[0/0]"]  # cause first


def test_a_code_error_fails_at_once_with_restarts_to_spare():
    with pytest.raises(JaxCodeError) as raised:
        run("crash_on_first_attempt", max_restarts=3)
    assert "no restart" in raised.value.summary
    assert str(raised.value).splitlines()[0] == "[0/1] RuntimeError: crash on the first attempt"


def test_a_python_that_does_not_exist_fails_at_once_and_names_it():
    """A typo in ``python=`` is no disruption: no restart is spent, and the message says which
    command could not start (exit 127 from the pod's init, as a shell says it)."""
    started = time.monotonic()
    with pytest.raises(JaxCodeError) as raised:
        run("hello", max_restarts=3, python="pythn-no-such-interpreter")
    assert "no restart" in raised.value.summary
    assert "the command could not be started" in str(raised.value)
    assert "pythn-no-such-interpreter" in str(raised.value)
    assert time.monotonic() - started < 60


def _pids(pid_dir: Path) -> list[int]:
    return [int(p) for f in pid_dir.glob("*.pid") for p in f.read_text().split()]


def test_timeout_leaves_no_process(tmp_path):
    """The timeout comes once both hosts and their children run (their start takes seconds on
    a busy machine; 20 s leaves room for it)."""
    with pytest.raises(
        AirflowTaskTimeout, match=r"execution_timeout of 20 s \(2\d\.\d s used by this try\)"
    ):
        run(
            "hang",
            timeout_s=20,
            initialize_distributed=False,
            entrypoint_kwargs={"pid_dir": str(tmp_path)},
        )
    pids = _pids(tmp_path)
    assert len(pids) == 4  # 2 processes, each with a child
    assert wait_gone(pids) == []


@pytest.mark.parametrize(
    ("ours_s", "airflows_s", "error"),
    [
        # Ours first (it counts from the try's start): Airflow's alarm is disarmed before the
        # clean-up, which it would otherwise cut short.
        (2, 60, "ran past its execution_timeout"),
        # Airflow's first (a deadline given by someone else): it interrupts the wait.
        (60, 2, "Timeout, PID"),
    ],
)
def test_either_timeout_ends_the_wait_and_leaves_no_process(tmp_path, ours_s, airflows_s, error):
    """Under Airflow's own ``timeout`` (as around ``execute``), whichever of the two comes
    first ends the wait, the other never fires, and the processes go."""
    message, left = _hang_under_airflows_alarm(tmp_path, airflows_s, timeout_s=ours_s)
    assert re.search(error, message), message
    if ours_s < airflows_s:
        assert left == 0, "Airflow's alarm was left armed through the clean-up"
    # Every process of the job and every child of theirs, found by the call they carry: on a
    # busy machine a process may not have written its pid file before a 2 s deadline.
    assert wait_gone([*_pids(tmp_path), *_job_processes(tmp_path)]) == []
    assert _job_processes(tmp_path) == []


def _job_processes(pid_dir: Path) -> list[int]:
    """This test process's descendants that run the job whose call names ``pid_dir``."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if str(pid_dir) in child.environ().get("AIRFLOW_JAX_CALL", ""):
                found.append(child.pid)
        except psutil.Error:  # gone meanwhile, or not ours to read
            continue
    return found


def test_airflows_alarm_due_just_after_our_deadline_never_lands_in_the_clean_up(tmp_path):
    """As under ``airflow dags test``: Airflow's alarm for the same timeout, counted from
    ``execute``'s start, is due a moment after our deadline. The wait notices its deadline
    within a 50 ms tick, so the alarm would win; it is held back, and the wait ends the try."""
    deadline = time.time() + 2
    airflows_s = deadline + 0.001 - time.time()
    message, left = _hang_under_airflows_alarm(tmp_path, airflows_s, deadline=deadline)
    assert "ran past its execution_timeout" in message, message
    assert left == 0, "Airflow's alarm was left armed through the clean-up"
    assert wait_gone(_pids(tmp_path)) == []


def _hang_under_airflows_alarm(tmp_path, airflows_s: float, **until: float) -> tuple[str, float]:
    """The ``AirflowTaskTimeout`` that ends ``hang`` under Airflow's own ``timeout`` (ours
    ending it at ``until``: ``timeout_s`` or ``deadline``), and the seconds that alarm had
    left as the run ended (0: disarmed)."""
    from airflow.sdk.execution_time.timeout import timeout

    with pytest.raises(AirflowTaskTimeout) as raised, timeout(airflows_s):
        try:
            run_outcome(
                "hang",
                initialize_distributed=False,
                entrypoint_kwargs={"pid_dir": str(tmp_path)},
                **until,
            )
        finally:
            left = signal.getitimer(signal.ITIMER_REAL)[0]
    return str(raised.value), left


def test_on_kill_from_a_signal_handler_leaves_no_process(tmp_path, monkeypatch):
    """Airflow calls on_kill from its SIGTERM handler, on the thread that runs execute()."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    op = operator(
        "hang", initialize_distributed=False, entrypoint_kwargs={"pid_dir": str(tmp_path)}
    )
    ti = SimpleNamespace(
        dag_id="d", task_id="train", run_id="r", map_index=-1, try_number=1, start_date=None
    )
    ti.xcom_push = lambda key, value: None

    def kill_once_started(*_: object) -> None:
        # Like Airflow's SIGTERM handler, but only once the processes run: a kill that lands
        # before the job exists has nothing to stop, and this handler does not raise.
        if len(_pids(tmp_path)) < 4:
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            return
        op.on_kill()

    previous = signal.signal(signal.SIGALRM, kill_once_started)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(JaxJobFailed, match="was killed"):
            op.execute({"ti": ti})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pids = _pids(tmp_path)
    assert len(pids) == 4
    assert wait_gone(pids) == []
    assert op.on_kill() is None  # nothing left to kill


def test_non_json_result_is_a_clear_error():
    with pytest.raises(JaxResultError) as failed:  # no retry: the training would run again
        run("not_json", initialize_distributed=False)
    message = str(failed.value)
    assert "[0/0] result error: ResultNotReturnable: the function returned a builtins.set" in (
        message
    )


@pytest.mark.parametrize("where", ["local", "gcs"])
def test_large_result_comes_back_through_output_dir(tmp_path, request, where):
    output_dir = (
        str(tmp_path / "out")
        if where == "local"
        else f"gs://{request.getfixturevalue('gcs_bucket')}/run"
    )
    result, _ = run(
        "large",
        initialize_distributed=False,
        output_dir=output_dir,
        entrypoint_kwargs={"size": 10_000},
    )
    assert result == "x" * 10_000


def test_localize_rewrites_only_the_coordinators():
    original = manifest("collective", num_slices=2)
    local = localize(original, 1234, 5678)
    env = {
        e["name"]: e.get("value")
        for e in local["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"
        ][0]["env"]
    }
    assert env["JAX_COORDINATOR_ADDRESS"] == "127.0.0.1:1234"
    assert env["MEGASCALE_COORDINATOR_ADDRESS"] == "127.0.0.1"
    assert env["MEGASCALE_PORT"] == "5678"
    assert original != local and original == manifest("collective", num_slices=2)


def test_a_hung_host_dumps_its_stack_and_the_slice_restarts(caplog):
    """Host 1 stops reporting at step 10: after progress_timeout its stack is in the log
    (every host's lines are, with stream_logs="all"), it exits 124, and the slice restarts
    and finishes."""
    result, _ = run(
        "hang_once",
        progress_timeout=2,
        max_restarts=1,
        initialize_distributed=False,
        stream_logs="all",
    )
    assert result["restart_attempt"] == 1
    restarted = [m for m in caplog.messages if m.startswith("job: restart")]
    assert len(restarted) == 1
    assert restarted[0].startswith("job: restart 1/1 after a hang on [0/1]: Hung: no progress")
    log = "\n".join(caplog.messages)
    # The idle time as measured when the watchdog looked: 2 s or more, later under load.
    waited = re.search(r"\[0/1\] airflow-jax: no progress report for (\d+)s", log)
    assert waited and int(waited[1]) >= 2, log
    assert "in sleep_forever" in log  # the hung frame, named in the dumped stack


def test_a_host_that_keeps_hanging_fails_the_task_with_its_stack():
    with pytest.raises(JaxJobFailed) as raised:
        run("hang_once", progress_timeout=2, max_restarts=0, initialize_distributed=False)
    assert "[0/1] hang: Hung: no progress report" in str(raised.value)
    assert "sleep_forever" in str(raised.value)


def test_the_task_log_is_capped_as_on_kubernetes(caplog):
    """1,000 lines per process per try, each cut at 1,000 characters, as the triggerer does."""
    result, _ = run(
        "chatty",
        initialize_distributed=False,
        entrypoint_kwargs={"lines": 200_000, "width": 100_000},
    )
    assert result == "done"
    shown = [m for m in caplog.messages if m.startswith("[0/0] ")]
    assert 999 <= len(shown) <= 1001, len(shown)
    assert max(len(m) for m in shown) <= 1000 + len("[0/0] ")
    assert "log output stops here in the task log" in shown[-1]
    assert sum(len(m) for m in caplog.messages) < 100_000  # against 44 MB uncapped


def test_a_process_that_left_its_session_ends_with_the_pod(tmp_path):
    """A child started with start_new_session=True escapes process-group kills; the pod's
    init still takes it, and the task does not wait on the pipe it holds (the child sleeps
    for ever). The bound is loose (a process's start takes 14 s on a loaded machine)."""
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result, _ = run(
        "leaves_a_child",
        initialize_distributed=False,
        accelerator="tpu-v5litepod-4",
        entrypoint_kwargs={"pid_file": str(pid_file)},
    )
    assert result == "returned at once"
    assert wait_gone([int(pid_file.read_text())]) == []
    assert time.monotonic() - started < 90, "the task waited on the pipe its child holds"


def test_each_process_keeps_its_local_tier_across_restarts_and_loses_it_with_the_run(caplog):
    """``local_checkpoint_size``: every process has a folder of its own at
    ``runtime.local_checkpoint_dir()``; what it wrote there is back after a restart (as an
    in-memory emptyDir survives an in-place restart), and the folder goes with the run."""
    result, _ = run(
        "local_tier_survives_a_restart",
        initialize_distributed=False,
        max_restarts=1,
        restart_strategy="in_place",
        local_checkpoint_size="64Mi",
    )
    assert result["process"] == 0 and result["starts_before"] == 1
    restarted = [m for m in caplog.messages if m.startswith("job: restart")]
    assert restarted == ["job: restart 1/1 in place after a disruption on [0/0]: killed by SIGKILL"]
    assert not os.path.exists(result["tier"])


def test_a_function_that_never_reports_has_the_runtimes_start_up_counted_as_such(caplog):
    """Start-up ends where the runtime calls the function, as a report ends it for the
    quickstart: never 0 s of start-up and a goodput of nearly 100 %."""
    outcome = run_outcome("collective_without_report")
    ledger = outcome.goodput
    assert "[0/0] airflow-jax: start-up done, calling collective_without_report" in caplog.messages
    # The interpreter, the runtime bundle, `import jax` and jax.distributed: most of a second.
    assert ledger["startup_s"] >= 0.3, ledger
    assert ledger["productive_s"] > 0 and ledger["goodput"] < 0.9, ledger
