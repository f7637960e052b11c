"""One control-plane process: started in its own session with its log in a file, waited on
until it answers its readiness check, and stopped with its whole process group. A component
that exits or never becomes ready raises an error that quotes the tail of its log."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness import reaper


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message says which part and why."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(f"    {line}" for line in text[-lines:])


def https_ok(url: str, token: str | None = None, ca: Path | None = None) -> bool:
    """Whether ``url`` answers 200 (TLS checked against ``ca`` when given, else not at all)."""
    context = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Component:
    """A control-plane binary: ``argv`` run with its log in ``log``; ``ready`` says when it
    serves. ``ports`` are checked free before it starts, for a clear error if not."""

    name: str
    argv: Sequence[str]
    log: Path
    ready: Callable[[], bool]
    ports: Sequence[int] = ()
    env: dict[str, str] | None = None
    cwd: Path | None = None
    pass_fds: Sequence[int] = ()  # open files it inherits (a lock it holds while it runs)
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, timeout: float = 60.0) -> Component:
        return self.spawn().wait_ready(timeout)

    def spawn(self) -> Component:
        """Start the process, not waiting for it (several components then start at once)."""
        for port in self.ports:
            if port_in_use(port):
                raise ControlPlaneError(f"{self.name}: port {port} on 127.0.0.1 is in use")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                list(self.argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stopped whole
                env={**os.environ, **(self.env or {})},
                cwd=self.cwd,
                pass_fds=tuple(self.pass_fds),
            )
        reaper.register_group(self.process.pid)  # stopped with a test run, however it ends
        return self

    def wait_ready(self, timeout: float = 60.0) -> Component:
        """Wait until ``ready`` says so; an exit first, or the timeout, is an error that
        quotes the log's tail (and stops the process)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (code := self.process.poll()) is not None:
                raise ControlPlaneError(
                    f"{self.name} exited with code {code} before it was ready; the end of "
                    f"{self.log}:\n{log_tail(self.log)}"
                )
            if self.ready():
                return self
            time.sleep(0.2)
        self.stop()
        raise ControlPlaneError(
            f"{self.name} was not ready after {timeout:.0f} s; the end of {self.log}:\n"
            f"{log_tail(self.log)}"
        )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def stop(self, grace: float = 10.0) -> None:
        if self.process is None:
            return
        stop_group(self.process.pid, grace)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1)
        reaper.unregister(self.process.pid)
        self.process = None


def stop_all(components: Sequence[Component], grace: float = 10.0) -> None:
    """Stop ``components`` together: SIGTERM to every group at once, SIGKILL to what is left
    after ``grace`` (a node's kubelet and containerd take seconds each to end)."""
    running = [c for c in components if c.process is not None]
    for component in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(component.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
    deadline = time.monotonic() + grace
    for component in running:
        component.stop(max(0.0, deadline - time.monotonic()))


def stop_group(pid: int, grace: float = 10.0) -> None:
    """SIGTERM the process group led by ``pid``, then SIGKILL what is left after ``grace``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
