"""A Docker engine for the compose tests: one the tests start, never the machine's own (the
stand-in images carry the real images' tags, which would replace a user's), shared by every
test process on the machine and stopped when the last is done.

The tests' engine is Debian's ``dockerd`` (20.10) with its image store in a per-machine
cache (``~/.cache/airflow-provider-jax/docker-engine``: the stand-in images and the build
cache outlive a run) and everything else in ``/run/airflow-provider-jax-docker``. Its default
bridge is one the supervisor makes (``jaxdocker0``, which a build's ``RUN`` steps use) and
removes; it adds no iptables chain (``--iptables=false``) and leaves the machine's IP
forwarding alone, so containers reach nothing beyond their bridges and this machine (no NAT),
and it reads no ``/etc/docker/daemon.json``. A compose project's network is a bridge of its
own that ``down`` removes, and published ports go through Docker's userland proxy on this
machine.

A supervisor process (``python -m tests.support.docker_engine``) owns it. Each test process
holds a shared lock on ``users.lock`` while it uses the engine; the supervisor polls for an
exclusive one, and when it gets it (no user is left, however the users ended: the kernel drops
a dead process's locks) it removes every container, network and volume, stops ``dockerd``
(which stops its containerd) and removes its empty cgroups. ``start.lock`` orders a start
against a stop, so a test never gets an engine that is stopping.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

STATE = Path("/run/airflow-provider-jax-docker")
DATA_ROOT = Path.home() / ".cache" / "airflow-provider-jax" / "docker-engine"
CGROUP_PARENT = "airflow-provider-jax-docker"
BRIDGE = "jaxdocker0"
BRIDGE_ADDRESS = "172.31.254.1/24"  # a private range on a bridge of the tests' own
START_TIMEOUT_S = 120
STOP_GRACE_S = 30


@dataclass(frozen=True)
class DockerEngine:
    host: str  # DOCKER_HOST for every docker and docker compose call

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_HOST": self.host}

    def docker(self, *args: str, timeout: float = 120) -> str:
        """``docker ARGS`` on this engine: its stdout; its output in the error if it fails."""
        done = subprocess.run(
            ["docker", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode:
            raise RuntimeError(f"docker {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout


def answers(host: str) -> bool:
    """Whether a Docker engine answers at ``host``."""
    try:
        done = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            env={**os.environ, "DOCKER_HOST": host},
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def missing() -> list[str]:
    """What the compose tests need and this machine lacks, in words (empty: nothing)."""
    needs = []
    if not shutil.which("docker"):
        needs.append("the docker CLI (apt-get install docker.io)")
    else:
        version = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, check=False
        )
        if version.returncode or " v2." not in version.stdout:
            needs.append(
                "Docker Compose v2 as the docker CLI plugin "
                "(bash tools/compose-images/compose-plugin.sh builds it)"
            )
    return needs


@contextlib.contextmanager
def engine() -> Iterator[DockerEngine]:
    """The engine the tests use, for as long as the context lasts; a failure that names what
    is missing when there can be none."""
    if needs := missing():
        pytest.fail("the compose tests need " + " and ".join(needs), pytrace=False)
    # Never the machine's own engine (DOCKER_HOST, /var/run/docker.sock): the stand-ins are
    # tagged as the images they stand in for (apache/airflow, postgres:16, redis), which would
    # replace a user's real ones there.
    if os.geteuid() != 0 or not shutil.which("dockerd"):
        pytest.fail(
            "the compose tests start a Docker engine of their own (never the machine's: their "
            "stand-in images carry the real images' tags), which needs root and Debian's "
            "docker.io installed",
            pytrace=False,
        )
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "users.lock", "a") as users:
        fcntl.flock(users, fcntl.LOCK_SH)  # released when this process ends, however it ends
        host = f"unix://{STATE / 'docker.sock'}"
        with open(STATE / "start.lock", "a") as start:
            fcntl.flock(start, fcntl.LOCK_EX)
            if not answers(host):
                _start_supervisor()
                _wait_for(host)
        yield DockerEngine(host)


def _start_supervisor() -> None:
    log = open(STATE / "supervisor.log", "ab")  # noqa: SIM115 - the supervisor's
    subprocess.Popen(
        [sys.executable, "-m", "tests.support.docker_engine"],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # outlives this process: the last user's exit stops it
    )
    log.close()


def _wait_for(host: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not answers(host):
        if time.monotonic() > deadline:
            log = (STATE / "dockerd.log").read_text(errors="replace")[-3000:]
            raise TimeoutError(f"dockerd did not answer within {START_TIMEOUT_S}s:\n{log}")
        time.sleep(0.5)


# The supervisor.


def _dockerd_argv() -> list[str]:
    """Nothing of the machine's: its own config file (empty, not /etc/docker/daemon.json,
    whose settings would change this engine or clash with these flags), and the machine's
    IP forwarding left as it is (dockerd turns it on by default; the stack's containers
    reach only their bridges and this machine's own addresses, which is no forwarding).
    Where the machine's forwarding is off, Docker warns at each container's creation that
    "networking will not work": only forwarding beyond this machine would not."""
    config = STATE / "daemon.json"
    config.write_text("{}\n")
    return [
        "dockerd",
        f"--config-file={config}",
        "--ip-forward=false",
        f"--data-root={DATA_ROOT}",
        f"--exec-root={STATE / 'exec'}",
        f"--pidfile={STATE / 'dockerd.pid'}",
        f"--host=unix://{STATE / 'docker.sock'}",
        f"--cgroup-parent=/{CGROUP_PARENT}",
        f"--bridge={BRIDGE}",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-masq=false",
        "--shutdown-timeout=10",
    ]


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the supervisor dies (PR_SET_PDEATHSIG)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def _stop_when_unused() -> tuple[object, object] | None:
    """``start.lock`` and ``users.lock``, both held exclusively, once no test process uses
    the engine (None while one does). Held until this process exits: no test starts on an
    engine that is stopping."""
    start = open(STATE / "start.lock", "a")  # noqa: SIM115 - held until exit when stopping
    fcntl.flock(start, fcntl.LOCK_EX)
    users = open(STATE / "users.lock", "a")  # noqa: SIM115
    try:
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        users.close()
        start.close()
        return None
    return start, users


def _clear(host: str) -> None:
    """Every container, network and volume the tests left (a killed run's): the images and
    the recent build cache stay."""
    env = {**os.environ, "DOCKER_HOST": host}

    def docker(*args: str) -> list[str]:
        done = subprocess.run(["docker", *args], env=env, capture_output=True, text=True)
        return done.stdout.split()

    if containers := docker("ps", "-aq"):
        docker("rm", "-f", "-v", *containers)
    docker("network", "prune", "-f")
    if volumes := docker("volume", "ls", "-q"):
        docker("volume", "rm", "-f", *volumes)
    # Images no tag names (a stand-in's or a build's older self), and the build cache past
    # what a rebuild of the current images needs.
    docker("image", "prune", "-f")
    docker("builder", "prune", "-f", "--keep-storage", "8GB")


def _bridge(up: bool) -> None:
    """Make the engine's default bridge (afresh: a killed run may have left it), or remove it."""
    subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)
    if up:
        for command in (
            ["ip", "link", "add", BRIDGE, "type", "bridge"],
            ["ip", "addr", "add", BRIDGE_ADDRESS, "dev", BRIDGE],
            ["ip", "link", "set", BRIDGE, "up"],
        ):
            subprocess.run(command, check=True)


def _kill_left_containerd() -> None:
    """The containerd dockerd runs, if dockerd died without stopping it (the pid file can
    outlive it: the process must still be this engine's)."""
    with contextlib.suppress(OSError, ValueError, ProcessLookupError):
        pid = int((STATE / "exec" / "containerd" / "containerd.pid").read_text())
        if str(STATE).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)


def _remove_cgroups() -> None:
    for parent in Path("/sys/fs/cgroup").glob(f"*/{CGROUP_PARENT}"):
        for folder in sorted(parent.rglob("*"), key=lambda p: -len(p.parts)):
            if folder.is_dir():
                with contextlib.suppress(OSError):
                    folder.rmdir()
        with contextlib.suppress(OSError):
            parent.rmdir()


def supervise() -> int:
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    host = f"unix://{STATE / 'docker.sock'}"
    _bridge(up=True)
    with open(STATE / "dockerd.log", "ab") as log:
        dockerd = subprocess.Popen(
            _dockerd_argv(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # The user that started us holds its lock already. The locks are kept until we exit.
    while not stop and dockerd.poll() is None:
        locks = _stop_when_unused()
        if locks:
            break
        time.sleep(1)
    if dockerd.poll() is None:
        _clear(host)
        dockerd.send_signal(signal.SIGTERM)
        try:
            dockerd.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            dockerd.kill()
            dockerd.wait()
    _kill_left_containerd()
    _remove_cgroups()
    _bridge(up=False)
    shutil.rmtree(STATE / "exec", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(supervise())
