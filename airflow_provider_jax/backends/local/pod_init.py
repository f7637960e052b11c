"""A local pod's init process: what a container's PID 1 does for the processes in it.

Run as a script, isolated and without ``site`` (``processes.POD_INIT_ARGV``), stdlib only, and
it starts its command with ``posix_spawnp``, not ``subprocess``: every pod pays its start
before the user's first line, and so it is one bare interpreter start. It makes
itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so whatever the command starts stays in
its process tree even after leaving its session (``start_new_session=True``), where killing a
process group cannot reach it. It runs the command, and once the command exits it kills every
process left in the tree, reaps them, and exits as the command did. :func:`descendants` lets
the backend kill the whole tree from outside too, when the pod is killed before its command
returns.

It also dies with the process that started it (the task's), however that one ends: SIGKILL,
the OOM killer, a lost worker. Nothing else would stop the pod then: it is in a session of its
own, and its processes would train on, re-parented to PID 1, on the cores and GPUs a retry
uses. A thread waits on a pidfd of that parent (readable once it has exited; Linux 5.3+, else
a look at ``getppid()`` every 0.2 s) and kills the tree. Not ``PR_SET_PDEATHSIG``: it fires
when the *thread* that forked the child exits, and the backend starts pods from its threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
ORPHANED_EXIT = 137  # as a container killed with SIGKILL
PARENT_POLL_S = 0.2  # where there is no pidfd
PARENT_ENV = "AIRFLOW_JAX_POD_PARENT"  # the pid of the process that started the pod
COMMAND_DEFAULTS = (signal.SIGTERM, signal.SIGINT)  # ignored by the init, not by the command


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (by ``/proc/<pid>/stat``'s parent), nearest first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after it
        parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL every process below ``pid``, whatever its session."""
    for child in descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)


def die_with_parent() -> None:
    """Kill the whole tree and exit once the process that started this one is gone. That
    process names itself in ``PARENT_ENV``: by the time this one looks, it may be gone."""
    parent = int(os.environ.pop(PARENT_ENV, None) or os.getppid())
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):  # ESRCH: gone already; or no pidfd
        pidfd = os.pidfd_open(parent)

    def wait_then_kill() -> None:
        if pidfd is not None:
            select.select([pidfd], [], [])  # readable once the parent has exited
        else:
            while os.getppid() == parent:
                time.sleep(PARENT_POLL_S)
        kill_tree(os.getpid())
        os._exit(ORPHANED_EXIT)

    threading.Thread(target=wait_then_kill, name="die-with-parent", daemon=True).start()


def main(argv: list[str]) -> int:
    die_with_parent()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # A SIGTERM to the pod's process group reaches the command directly; the init waits for
    # it to act on it, as a container's init does. The command gets the default handlers back.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ, setsigdef=COMMAND_DEFAULTS)
    except OSError as err:  # as a container runtime reports a missing executable
        print(f"cannot run {argv[0]!r}: {err.strerror}", file=sys.stderr, flush=True)
        return 127
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])  # negative: killed by that signal
    kill_tree(os.getpid())
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)  # reap what was killed
    if code < 0:  # killed by a signal: die by it too, so the backend sees the same
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
