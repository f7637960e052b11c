"""Run one pod of a JobSet as a local process, on the GPUs it is handed or with the CPU
posing as the pod's chips.

Shared by the local backend and the test cluster's kubelet. The image is ignored: the process
runs the pod's command with the worker's Python first on ``PATH`` and the pod's resolved env.
Each pod runs under its own init (``pod_init``), in a session of its own: when the command
exits or the pod is killed, every process it started goes too, even one that left the
session.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from airflow_provider_jax.backends.local import pod_init
from airflow_provider_jax.backends.local.pod_init import kill_tree
from airflow_provider_jax.backends.local.pods import PodPlan
from airflow_provider_jax.manifest.gpu_direct import NODE_ENV
from airflow_provider_jax.runtime.env import TERMINATION_PATH_ENV
from airflow_provider_jax.runtime.messages import TERMINATION_MESSAGE_LIMIT

# Isolated and without ``site`` (it is stdlib only): no ``.pth`` file or package is imported
# in every pod's start-up.
POD_INIT_ARGV = (sys.executable, "-I", "-S", pod_init.__file__)
# How many CPU devices JAX makes, standing in for a host's chips. JAX's own setting, not the
# XLA flag it overrides: a program that sets XLA_FLAGS for itself (a dump folder, say) keeps
# the host's chips, as it would on the accelerator.
CPU_DEVICES_ENV = "JAX_NUM_CPU_DEVICES"
TERMINATION_LOG = "termination-log"
#: What several processes of one machine need of NCCL, unless the worker or the pod says
#: otherwise: bootstrap and socket traffic on the loopback, where the coordinator is.
LOCAL_NCCL_ENV = {"NCCL_SOCKET_IFNAME": "lo"}

#: Called with (plan, stream name "stdout"/"stderr", line without its newline), from a reader
#: thread of the process.
LineCallback = Callable[[PodPlan, str, str], None]


def process_env(
    plan: PodPlan,
    scratch: str,
    pythonpath: Sequence[str] = (),
    base: Mapping[str, str] | None = None,
    gpus: Sequence[str] = (),
) -> dict[str, str]:
    """The env a pod's process gets locally: the worker's env, then the pod's, then what puts
    it on ``gpus`` (``CUDA_VISIBLE_DEVICES`` entries) or, without any, makes the CPU stand in
    for ``plan.chips`` accelerator chips. ``scratch`` is the pod's own directory (its
    ``TMPDIR`` and termination message), removed when the pod is closed."""
    base = os.environ if base is None else base
    env = {**base, **plan.env}
    for name, node_value in NODE_ENV.items():  # a GKE node's paths are not this machine's
        if plan.env.get(name) == node_value:
            env.pop(name)
            if name in base:
                env[name] = base[name]
    if gpus:
        devices = {
            "JAX_PLATFORMS": "cuda",
            "CUDA_VISIBLE_DEVICES": ",".join(gpus),
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",  # nvidia-smi's numbering, which ``gpus`` uses
        }
        env = {**LOCAL_NCCL_ENV, **env}
    else:
        devices = {"JAX_PLATFORMS": "cpu", CPU_DEVICES_ENV: str(plan.chips)}
    python_dir = os.path.dirname(sys.executable)
    paths = [*pythonpath, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(
        {
            **devices,
            TERMINATION_PATH_ENV: os.path.join(scratch, TERMINATION_LOG),
            pod_init.PARENT_ENV: str(os.getpid()),  # the pod dies with this process
            "TMPDIR": scratch,  # like a container's /tmp, gone with the pod
            # `python3` in the pod's command must be the worker's Python, with its packages.
            "PATH": os.pathsep.join([python_dir, env.get("PATH", os.defpath)]),
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
            "PYTHONUNBUFFERED": "1",  # lines reach the task log as they are printed
        }
    )
    return env


class PodProcess:
    """One running pod. Start it with :meth:`start`; :meth:`close` it once it has exited."""

    def __init__(self, plan: PodPlan, popen: subprocess.Popen[str], scratch: Path):
        self.plan = plan
        self.popen = popen
        self.scratch = scratch
        self.termination_path = scratch / TERMINATION_LOG
        self._readers: list[threading.Thread] = []
        self._message: str | None = None
        # Readable once the process has exited (Linux 5.3+), so a waiter wakes at the exit,
        # not at its next tick. Taken before the process can be reaped: its pid stays ours.
        self.exit_fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # no pidfd: the waiter ticks
            self.exit_fd = os.pidfd_open(popen.pid)

    @classmethod
    def start(
        cls,
        plan: PodPlan,
        on_line: LineCallback,
        pythonpath: Sequence[str] = (),
        gpus: Sequence[str] = (),
    ) -> PodProcess:
        """Start ``plan``'s process on ``gpus`` (none: the CPU stands in), in the first folder
        of ``pythonpath`` (the DAG file's): a relative path in a command means what it means
        in the image, whose working directory holds the code."""
        scratch = tempfile.mkdtemp(prefix=f"{plan.name}-")
        popen = subprocess.Popen(
            [*POD_INIT_ARGV, *plan.argv],
            cwd=pythonpath[0] if pythonpath else None,
            env=process_env(plan, scratch, pythonpath, gpus=gpus),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # own session and process group, like a container
        )
        process = cls(plan, popen, Path(scratch))
        for name, stream in (("stdout", popen.stdout), ("stderr", popen.stderr)):
            reader = threading.Thread(
                target=_pump,
                args=(stream, plan, name, on_line),
                name=f"{plan.name}-{name}",
                daemon=True,
            )
            reader.start()
            process._readers.append(reader)
        return process

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        """The exit code (negative: killed by that signal), or None while running."""
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group; SIGKILL takes every descendant too, whatever its
        session (the pod's init keeps them in its tree). Never blocks, so a signal handler
        may call it."""
        if sig == signal.SIGKILL and self.popen.returncode is None:  # not reaped: still its pid
            kill_tree(self.popen.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
            os.killpg(self.popen.pid, sig)

    def termination_message(self) -> str | None:
        """What the process wrote to its termination-message path, if anything."""
        if self._message is not None:  # closed
            return self._message or None
        try:  # Kubernetes keeps at most this much of a termination message; so do we
            with self.termination_path.open("rb") as f:
                text = f.read(TERMINATION_MESSAGE_LIMIT).decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        return text or None

    def reported_at(self) -> float:
        """When the process last wrote its termination message (ns since the epoch, the
        file's mtime); +inf when it wrote none."""
        try:
            return self.termination_path.stat().st_mtime_ns
        except FileNotFoundError:
            return math.inf

    def close(self, timeout: float = 5.0) -> None:
        """Reap the exited process, kill what it left in its group, drain its output."""
        self.popen.wait()
        self.kill()  # a container's exit takes its children with it
        for reader in self._readers:
            reader.join(timeout)
        self._message = self.termination_message() or ""
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.exit_fd is not None:
            os.close(self.exit_fd)
            self.exit_fd = None


def wait_any_exit(processes: Sequence[PodProcess], timeout: float) -> None:
    """Return once one of ``processes`` that had not exited at its last :meth:`PodProcess.poll`
    exits, or after ``timeout`` (a process without a pidfd is seen then). Safe on the thread
    that takes signals, where Airflow's SIGTERM calls ``on_kill``: ``select`` runs the handler
    and goes on waiting (PEP 475). A lock's timed wait (``SimpleQueue.get(timeout=...)``) once
    stayed blocked for good after a handler ran in it, every process gone."""
    running = [p.exit_fd for p in processes if p.exit_fd is not None and p.popen.returncode is None]
    select.select(running, [], [], timeout)


def _pump(stream: IO[str], plan: PodPlan, name: str, on_line: LineCallback) -> None:
    with stream:
        for line in stream:
            on_line(plan, name, line.rstrip("\n"))
