"""Whatever a test run starts dies with it, even when the run is killed: the reaper
(``harness/reaper.py``) stops every registered process group and daemon once the run's
process exits, and never signals a pid the kernel has given to another process since."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import reaper
from harness.processes import alive, wait_gone
from tests.harness.held_services import PIDS_FILE, with_marker
from tests.support.jobset_schema import REPO
from tests.support.postgres import postgres_bin


def test_a_registered_group_stops_when_the_watched_process_exits(tmp_path, monkeypatch):
    monkeypatch.setenv(reaper.ENV, str(tmp_path / "registry"))
    (tmp_path / "registry").mkdir()
    # The watched "run": a process that registers a group of its own, then exits.
    run = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    group = subprocess.Popen(["sleep", "600"], start_new_session=True)
    reaper.register_group(group.pid)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "harness.reaper", str(run.pid), str(tmp_path / "registry")],
        cwd=REPO,
        start_new_session=True,
    )
    assert group.poll() is None
    run.communicate(b"")  # the run exits, as a killed pytest would
    assert watcher.wait(30) == 0
    assert group.wait(5) == -signal.SIGTERM
    assert not (tmp_path / "registry").exists()


def test_a_pid_given_to_another_process_is_never_signalled(tmp_path, monkeypatch):
    monkeypatch.setenv(reaper.ENV, str(tmp_path))
    other = subprocess.Popen(["sleep", "600"], start_new_session=True)
    # An entry for the same pid with another start time: a registered process that ended,
    # whose pid the kernel reused.
    (tmp_path / f"group-{other.pid}").write_text(f"1 {int(signal.SIGTERM)}")
    try:
        assert reaper.reap(tmp_path, grace=0.5) == []
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    return ""


def _left_of(held: dict) -> dict[str, object]:
    """What is left of a killed run's cluster on this machine."""
    directory = held["directory"]
    processes = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if directory in (proc / "cmdline").read_text():
                    processes.append(int(proc.name))
    cgroups = [
        str(h) for h in Path("/sys/fs/cgroup").iterdir() if (h / held["cgroup"][1:]).exists()
    ]
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if directory in line]  # fmt: skip
    link = subprocess.run(["ip", "link", "show", held["link"]], capture_output=True).returncode == 0
    nodes = Path(directory, "nodes")
    return {k: v for k, v in {"processes": processes, "cgroups": cgroups, "mounts": mounts,
                              "link": link, "nodes' state": nodes.exists()}.items() if v}  # fmt: skip


@pytest.mark.real_cluster
@pytest.mark.airflow_stack
@pytest.mark.timeout(400)
def test_a_test_run_killed_by_a_signal_leaves_nothing_running_or_behind(tmp_path):
    """A pytest run that holds the real cluster (a pod running on one of its nodes) and
    PostgreSQL gets SIGTERM, as ``timeout`` sends it, to its whole process group: nothing it
    started outlives it (the nodes' kubelets, containerds, the pod's shim and container
    included), and its nodes leave no cgroup, network link, mount or containerd state
    behind."""
    if postgres_bin() is None:
        pytest.fail("PostgreSQL is not installed (apt-get install postgresql)", pytrace=False)
    pids_file = tmp_path / "pids.json"
    run = subprocess.Popen(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "tests/harness/held_services.py",
        ],
        cwd=REPO,
        env={**os.environ, PIDS_FILE: str(pids_file), reaper.ENV: ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group, signalled whole as timeout(1) does
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not pids_file.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert pids_file.exists(), f"the held run never came up (exit {run.poll()})"
        held = json.loads(pids_file.read_text())
        pids = held["pids"]
        assert len(pids) >= 6 and all(alive(p) for p in pids), pids  # the cluster, PostgreSQL
        assert _left_of(held).keys() >= {"processes", "cgroups", "link", "nodes' state"}
        pod = [held["container"], held["shim"]]  # a pod's container and its containerd shim
        assert all(alive(p) for p in pod) and "containerd-shim" in cmdline(held["shim"]), held
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(30)
        assert wait_gone([*pids, *pod], timeout=30) == []
        assert with_marker(held["marker"]) == []
        deadline = time.monotonic() + 60
        while (left := _left_of(held)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert left == {}, left
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
