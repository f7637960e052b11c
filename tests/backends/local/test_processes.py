from __future__ import annotations

import os
import signal
import sys
import threading
import time

from airflow_provider_jax.backends.local.pods import PodPlan
from airflow_provider_jax.backends.local.processes import PodProcess, process_env, wait_any_exit
from airflow_provider_jax.runtime.env import TERMINATION_PATH_ENV
from harness.processes import alive, wait_gone


def plan(argv: list[str], env: dict[str, str] | None = None, chips: int = 4) -> PodPlan:
    return PodPlan(
        name="job-slice-0-1",
        slice_index=0,
        host_index=1,
        labels={},
        annotations={},
        argv=argv,
        env=env or {},
        chips=chips,
        termination_message_path="/dev/termination-log",
    )


def test_env_makes_the_cpu_pose_as_the_chips():
    base = {
        "PATH": "/usr/bin",
        "PYTHONPATH": "/base",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_dump_to=/tmp/x",
        "JAX_PLATFORMS": "tpu",
        "HOME": "/home/me",
    }
    env = process_env(
        plan([], {"JAX_PROCESS_ID": "1", "PYTHONPATH": "/pod"}, chips=8),
        "/tmp/pod-1",
        pythonpath=["/dags", "/pod"],
        base=base,
    )
    assert env["HOME"] == "/home/me"  # the worker's env
    assert env["JAX_PROCESS_ID"] == "1"  # the pod's
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["JAX_NUM_CPU_DEVICES"] == "8"  # JAX's setting wins over the worker's XLA flag
    assert env["XLA_FLAGS"] == base["XLA_FLAGS"]  # the worker's, as they were
    assert env[TERMINATION_PATH_ENV] == "/tmp/pod-1/termination-log"
    assert env["TMPDIR"] == "/tmp/pod-1"
    assert env["PATH"] == f"{os.path.dirname(sys.executable)}{os.pathsep}/usr/bin"
    assert env["PYTHONPATH"].split(os.pathsep) == ["/dags", "/pod"]


def test_streams_lines_exit_code_and_termination_message():
    lines: list[tuple[str, str, str]] = []
    script = (
        f'echo out-1; echo err-1 >&2; printf "%s" "$MSG" > "${TERMINATION_PATH_ENV}"; '
        "echo out-2; exit 3"
    )
    process = PodProcess.start(
        plan(["/bin/sh", "-c", script], {"MSG": '{"ok":false}'}),
        lambda p, stream, line: lines.append((p.tag, stream, line)),
    )
    assert process.wait(10) == 3
    process.close()
    assert [line for line in lines if line[1] == "stdout"] == [
        ("[0/1]", "stdout", "out-1"),
        ("[0/1]", "stdout", "out-2"),
    ]
    assert ("[0/1]", "stderr", "err-1") in lines
    assert process.termination_message() == '{"ok":false}'
    assert not process.scratch.exists()  # cleaned up, message kept


def test_python3_is_the_workers_python():
    lines: list[str] = []
    process = PodProcess.start(
        plan(["python3", "-c", "import sys; print(sys.executable)"]),
        lambda p, stream, line: lines.append(line),
    )
    assert process.wait(10) == 0
    process.close()
    assert os.path.realpath(lines[0]) == os.path.realpath(sys.executable)


def test_kill_takes_the_whole_process_group():
    pids: list[str] = []
    ready = threading.Event()

    def on_line(p, stream, line):
        pids.extend(line.split())
        ready.set()

    # The pod's process starts a grandchild, as training code does with data loaders.
    process = PodProcess.start(plan(["/bin/sh", "-c", "sleep 600 & echo $$ $!; wait"]), on_line)
    assert ready.wait(10)
    assert all(alive(int(p)) for p in pids)
    started = time.monotonic()
    process.kill()
    process.close()
    assert wait_gone(int(p) for p in pids) == []
    assert time.monotonic() - started < 5
    assert process.poll() == -9


def test_kill_takes_a_descendant_that_left_the_session():
    pids: list[str] = []
    ready = threading.Event()

    def on_line(p, stream, line):
        pids.extend(line.split())
        ready.set()

    # It says its own pid: another test's processes may run beside this one.
    argv = ["/bin/sh", "-c", "setsid /bin/sh -c 'echo $$; exec sleep 600' & wait"]
    process = PodProcess.start(plan(argv), on_line)
    assert ready.wait(10)
    (escaped,) = (int(p) for p in pids)
    assert os.getsid(escaped) != os.getsid(process.pid)  # out of the pod's session
    process.kill()
    process.close()
    assert wait_gone([escaped]) == []


def test_a_missing_executable_exits_127_with_its_name():
    lines: list[tuple[str, str]] = []
    process = PodProcess.start(
        plan(["no-such-command-here"]), lambda p, s, line: lines.append((s, line))
    )
    assert process.wait(10) == 127  # as a container runtime reports it
    process.close()
    assert ("stderr", "cannot run 'no-such-command-here': No such file or directory") in lines


def test_the_command_gets_sigterm_back_from_the_init():
    """The init ignores SIGTERM (the command decides); the command must not inherit that."""
    ready = threading.Event()
    process = PodProcess.start(
        plan(["python3", "-c", "import time; print('up', flush=True); time.sleep(600)"]),
        lambda p, s, line: ready.set(),
    )
    assert ready.wait(10)
    process.kill(signal.SIGTERM)
    assert process.wait(10) == -signal.SIGTERM  # the init dies as its command did
    process.close()


def test_a_waiter_wakes_at_the_exit_not_at_its_timeout():
    process = PodProcess.start(plan(["python3", "-c", "pass"]), lambda p, s, line: None)
    assert process.exit_fd is not None
    started = time.monotonic()
    wait_any_exit([process], timeout=30)
    assert time.monotonic() - started < 10
    assert process.wait(1) == 0
    process.close()
    assert process.exit_fd is None


def test_a_pod_dies_with_the_task_process_however_it_is_killed(tmp_path):
    """SIGKILL to the process that runs the task (the OOM killer, a lost worker): its local
    job's processes, in sessions of their own, go too, a child of theirs included."""
    import subprocess
    from pathlib import Path

    from tests.support.jobset_schema import REPO
    from tests.support.waiting import eventually

    task = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tests.support.local_runs import run; "
            "run('hang', initialize_distributed=False, entrypoint_kwargs={'pid_dir': sys.argv[1]})",
            str(tmp_path),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:

        def started() -> list[int]:
            found = [int(p) for f in Path(tmp_path).glob("*.pid") for p in f.read_text().split()]
            return found if len(found) == 4 else []  # 2 hosts, each with a child

        pids = eventually("both hosts and their children to run", started, 120)
        task.kill()
        task.wait()
        assert wait_gone(pids, timeout=10) == []
    finally:
        task.kill()
