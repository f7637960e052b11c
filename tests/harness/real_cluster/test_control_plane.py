"""``make cluster-down`` (and ``make cluster``, which first stops what a last run left) signals
only the processes its ``state.json`` recorded: a pid reused after a crash or a reboot, by a
process that started at another time, is left alone."""

from __future__ import annotations

import json
import subprocess

from harness.real_cluster.control_plane import stop_recorded
from harness.reaper import start_time


def _state(tmp_path, pid: int, started: str | None) -> None:
    pids = {"kube-apiserver": [pid, started]}
    (tmp_path / "state.json").write_text(json.dumps({"pids": pids, "cgroup": None}))


def test_a_recorded_process_is_stopped_and_a_reused_pid_is_not(tmp_path):
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        _state(tmp_path, other.pid, "1")  # the pid, but another process's start time
        assert stop_recorded(tmp_path) == []
        assert other.poll() is None  # still running: not the recorded process

        _state(tmp_path, other.pid, start_time(other.pid))
        assert stop_recorded(tmp_path) == ["kube-apiserver"]
        assert other.wait(timeout=30) is not None
    finally:
        other.kill()
        other.wait()
