"""``debug_dump=True``: what a failed host leaves behind for someone without ``kubectl``.

- XLA dumps every HLO module it compiles into a folder on the host (``--xla_dump_to``, added
  to ``XLA_FLAGS`` before JAX is imported), as xpk's ``--debug-dump-gcs`` does;
- the process's output, its own and XLA's C++ logs alike, is kept as it goes: the last lines
  of file descriptors 1 and 2, teed through a pipe to where they went before;
- on any failure (an exception, a lost peer, a hang) every thread's Python stack is saved
  beside them, as xpk's stack-trace sidecar collects them, but in the process itself: no
  sidecar, no extra RBAC;
- then, and at the end of a run that succeeded, all of it goes to
  ``<output_dir>/debug/try-<n>/host-<i>/`` (``folder_upload``, within a cap) before the
  process exits.

Without ``debug_dump`` none of this module runs: no pipe, no flag, no thread.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import threading
from pathlib import Path

from airflow_provider_jax.runtime import exits
from airflow_provider_jax.runtime.folder_upload import upload_folder
from airflow_provider_jax.runtime.watchdog import all_stacks

XLA_FOLDER = "xla"  # the HLO modules
STACKS_FILE = "stacks.txt"  # every thread's Python stack at the failure
TRACEBACK_FILE = "traceback.txt"  # the exception that failed the process
LOG_TAIL_FILE = "log-tail.txt"  # the last lines the process wrote to stdout and stderr
LOG_TAIL_LINES = 2000
CAP_BYTES = 512 * 2**20  # one host's dump of one attempt
DRAIN_TIMEOUT = 2.0  # s: for the tee to hand on what it holds (a child may keep the pipe open)
_FIRST = (TRACEBACK_FILE, STACKS_FILE, LOG_TAIL_FILE)  # sent before any HLO module


class LogTail:
    """Tees file descriptors 1 and 2 through pipes: every byte still goes where it went, and
    the last ``lines`` lines stay in memory for the dump."""

    def __init__(self, lines: int = LOG_TAIL_LINES) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=lines)
        self._lock = threading.Lock()
        self._originals: dict[int, int] = {}
        self._readers: list[threading.Thread] = []

    def start(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd in (1, 2):
            original = os.dup(fd)
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            self._originals[fd] = original
            reader = threading.Thread(
                target=self._copy, args=(read_end, original), name=f"airflow-jax-tee-{fd}"
            )
            reader.daemon = True
            reader.start()
            self._readers.append(reader)

    def stop(self) -> None:
        """Put fds 1 and 2 back and wait until the pipes are drained: nothing written before
        is lost, and the tail is complete."""
        if not self._originals:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original in self._originals.items():
            os.dup2(original, fd)  # closes the pipe's last write end: its reader sees the end
        self._originals = {}
        for reader in self._readers:
            reader.join(DRAIN_TIMEOUT)

    def text(self) -> str:
        with self._lock:
            return "".join(self.lines)

    def _copy(self, read_end: int, original: int) -> None:
        partial = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(original, view) :]
                *whole, partial = (partial + chunk).split(b"\n")
                with self._lock:
                    self.lines.extend(line.decode(errors="replace") + "\n" for line in whole)
        if partial:
            with self._lock:
                self.lines.append(partial.decode(errors="replace") + "\n")


class DebugDump:
    """One host's debug dump: armed before JAX is imported, saved once.

    :param uri: where this host's dump goes (``.../debug/try-<n>/host-<i>``).
    """

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.folder = Path(tempfile.mkdtemp(prefix="airflow-jax-debug-"))
        self.tail = LogTail()
        self._saved = False

    def arm(self) -> None:
        """XLA's dump flag and the log tee; the tee is given back before any exit."""
        flags = os.environ.get("XLA_FLAGS", "")
        if "--xla_dump_to" not in flags:  # the user's own dump folder wins
            xla = self.folder / XLA_FOLDER
            os.environ["XLA_FLAGS"] = f"{flags} --xla_dump_to={xla}".strip()
        self.tail.start()
        exits.before_exit(self.tail.stop)

    def save(self, traceback_text: str | None = None, stacks: str | None = None) -> None:
        """Write what a failure leaves (``traceback_text``, and ``stacks``, or every thread's
        stack now) and the log tail, then send the folder; once. A success sends no stacks."""
        if self._saved:
            return
        self._saved = True
        if traceback_text is not None or stacks is not None:
            (self.folder / STACKS_FILE).write_text(stacks or all_stacks())
        if traceback_text:
            (self.folder / TRACEBACK_FILE).write_text(traceback_text)
        self.tail.stop()  # the tail is complete once the pipes are drained
        (self.folder / LOG_TAIL_FILE).write_text(self.tail.text())
        try:
            sent = upload_folder(self.folder, self.uri, CAP_BYTES, first=_FIRST)
        except Exception as err:  # the exit code matters more than the dump
            print(f"airflow-jax: the debug dump was not uploaded: {err}", file=sys.stderr)
            return
        print(f"airflow-jax: debug dump: {sent.summary(self.uri, CAP_BYTES)}", file=sys.stderr)
        sys.stderr.flush()
