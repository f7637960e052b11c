"""Whatever a test run starts dies with it, even when the run itself is killed.

The control plane, the fake kubelet's pods, PostgreSQL and a running Airflow each run in a
process group (or, for PostgreSQL, a daemon) of their own, so a test run stopped by a signal
(``timeout`` sends pytest SIGTERM) used to leave them running, reparented to init, holding
ports and memory for the next run. A run starts one reaper (:func:`start`): a small process in
a session of its own that waits for the run's process to exit, however it exits, then stops
every process group and daemon registered with it and not stopped already.

The real nodes' cgroups (``harness/real_cluster/cgroups.py``) and their state folders are
registered too, by path: once the processes are gone, they are removed (cgroup v1 keeps its
folders after the last process; a node's containerd root and kubelet state would stay on disk).

Registration is a file per process (or cgroup) in the reaper's folder, named by ``AIRFLOW_JAX_REAPER_DIR``
in the environment, so processes the run starts (the fake kubelet) register theirs too. Each
entry keeps its process's start time, so a pid that the kernel has since given to another
process is never signalled. ``make cluster``'s control plane runs without a reaper: it is meant
to outlive the command that started it.

    python -m harness.reaper <pid to watch> <folder>
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.processes import alive

ENV = "AIRFLOW_JAX_REAPER_DIR"
GRACE_S = 10.0  # from SIGTERM to SIGKILL, as the harness's own stop gives
_GROUP, _DAEMON, _CGROUP, _FOLDER = "group", "daemon", "cgroup", "folder"


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def register_group(pgid: int, folder: Path | None = None) -> None:
    """Stop process group ``pgid`` (its leader's pid) with the run, if a reaper watches it
    (``folder``: that reaper's registry, else the one :data:`ENV` names)."""
    _register(_GROUP, pgid, signal.SIGTERM, folder)


def register_daemon(pid: int, stop: int = signal.SIGTERM) -> None:
    """Stop process ``pid`` (a daemon, in a session of its own) with the run, by signal
    ``stop`` first (PostgreSQL's immediate shutdown is SIGQUIT)."""
    _register(_DAEMON, pid, stop)


def register_cgroup(relative: str) -> None:
    """Remove cgroup ``relative`` (in every hierarchy) once the run's processes are gone."""
    if folder := os.environ.get(ENV):
        name = relative.strip("/").replace("/", "_")
        Path(folder, f"{_CGROUP}-{name}").write_text(relative)


def unregister_cgroup(relative: str) -> None:
    if folder := os.environ.get(ENV):
        name = relative.strip("/").replace("/", "_")
        with contextlib.suppress(FileNotFoundError):
            Path(folder, f"{_CGROUP}-{name}").unlink()


def register_folder(path: Path) -> None:
    """Remove folder ``path`` once the run's processes are gone (a real node's containerd
    root and kubelet state: a killed run leaves none behind)."""
    if folder := os.environ.get(ENV):
        name = hashlib.sha1(str(path).encode()).hexdigest()[:16]
        Path(folder, f"{_FOLDER}-{name}").write_text(str(path))


def unregister(pid: int) -> None:
    """``pid`` was stopped as it should be: nothing left to do for it."""
    if folder := os.environ.get(ENV):
        for kind in (_GROUP, _DAEMON):
            with contextlib.suppress(FileNotFoundError):
                Path(folder, f"{kind}-{pid}").unlink()


def _register(kind: str, pid: int, stop: int, folder: Path | None = None) -> None:
    folder = folder or os.environ.get(ENV)
    if folder and (started := start_time(pid)) is not None:
        entry = Path(folder, f"{kind}-{pid}")
        partial = entry.with_name(f".{entry.name}.partial")
        partial.write_text(f"{started} {int(stop)}")
        partial.replace(entry)


def start(folder: Path, *, registering: bool = True) -> subprocess.Popen[bytes]:
    """A reaper for this process, registering into ``folder`` from now on (this process and
    whatever it starts inherit :data:`ENV`); without ``registering``, one for what is
    registered in ``folder`` by name (a part of the run that passes it on itself)."""
    folder.mkdir(parents=True, exist_ok=True)
    if registering:
        os.environ[ENV] = str(folder)
    return subprocess.Popen(
        [sys.executable, "-m", "harness.reaper", str(os.getpid()), str(folder)],
        start_new_session=True,  # not in the run's process group: it outlives the run
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[1],
    )


def wait_for_exit(pid: int) -> None:
    """Return once process ``pid`` has exited: at once through its pidfd, else by polling."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        while alive(pid):
            time.sleep(0.5)
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def reap(folder: Path, grace: float = GRACE_S) -> list[int]:
    """SIGTERM every registered process (group) still the one registered, SIGKILL what is left
    after ``grace``; the pids it signalled."""
    targets: list[tuple[str, int, int]] = []
    for entry in sorted(folder.glob("*-*")):
        kind, _, pid_text = entry.name.partition("-")
        if kind not in (_GROUP, _DAEMON) or not pid_text.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            started, stop = entry.read_text().split()
            pid = int(pid_text)
            if start_time(pid) == started:  # the same process, not a reused pid
                targets.append((kind, pid, int(stop)))
    for kind, pid, stop in targets:
        _signal(kind, pid, stop)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(pid) for _, pid, _ in targets):
        time.sleep(0.1)
    for kind, pid, _ in targets:
        _signal(kind, pid, signal.SIGKILL)
    if cgroups := [e.read_text() for e in sorted(folder.glob(f"{_CGROUP}-*"))]:
        from harness.real_cluster import cgroups as cgroup_folders

        for relative in cgroups:
            cgroup_folders.remove(relative, timeout=grace + 5)
    for entry in sorted(folder.glob(f"{_FOLDER}-*")):
        shutil.rmtree(entry.read_text(), ignore_errors=True)
    return [pid for _, pid, _ in targets]


def _signal(kind: str, pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if kind == _GROUP:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def main(argv: list[str]) -> int:
    watched, folder = int(argv[0]), Path(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the run is the run's to handle
    wait_for_exit(watched)
    reap(folder)
    for entry in folder.glob("*"):
        with contextlib.suppress(OSError):
            entry.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
