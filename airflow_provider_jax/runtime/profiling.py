"""JAX profiler traces on every host: a window of steps (``profile_steps``), counted by the
function's own ``report(step=...)`` calls, or a block of code (``runtime.profile()``).

Each trace is written where TensorBoard's profile plugin and XProf look for one
(``plugins/profile/<run>/<host>.xplane.pb``), below ``<output_dir>/profiles/try-<n>/host-<i>``:
straight into that folder where its store is this host's files (locally), else through a
folder on the host and an upload (GCS; the upload runs on its own thread, so the loop goes on
at once). The window costs nothing outside it: a report compares one int, and nothing here
waits on the device.

Which steps: a report of step ``s`` follows the work of step ``s``, so the trace starts at the
report of step ``start - 1`` (at the call, for ``start == 0``, compilation included) and stops
at the report of step ``start + count - 1``.

JAX runs one trace per process at a time: a second ``start_trace`` raises "Profile has already
been started". Whichever trace starts first is kept, and training goes on either way. When the
program's own trace runs, the provider's does not start, and says so. While the provider's
runs, the program's ``jax.profiler.start_trace`` (and ``jax.profiler.trace``, which calls it)
does nothing but say so, and its ``stop_trace`` then does nothing too: the runtime wraps
both, in ``jax.profiler`` and in ``jax._src.profiler`` whose ``trace`` looks them up there.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from airflow_provider_jax.runtime.stores import parse_location, store_for

MAX_PROFILE_STEPS = 100  # a trace of more steps is too big to open (XProf loads it whole)
UPLOAD_CAP_BYTES = 2 * 2**30  # one host's traces of one attempt
UPLOAD_TIMEOUT = 120.0  # s: a finished function waits this long for its last upload
WINDOW = "profile_steps"  # who started a trace: the window, or a runtime.profile() block


def check_profile_steps(value: object) -> tuple[int, int]:
    """``(start, count)`` as two ints, start >= 0 and 1 <= count <= MAX_PROFILE_STEPS; else
    a ValueError naming ``profile_steps``. The operators check at parse and the pods again."""
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and value[0] >= 0
        and 1 <= value[1] <= MAX_PROFILE_STEPS
    ):
        return int(value[0]), int(value[1])
    raise ValueError(
        "profile_steps must be (start, count): two integers, start >= 0 (the first step "
        f"traced, as report(step=...) counts) and count from 1 to {MAX_PROFILE_STEPS} (a trace "
        f"of more steps is too big to open), got {value!r}."
    )


class Profiler:
    """Starts and stops ``jax.profiler`` traces for one host and sends them to ``uri``.

    :param uri: this host's profile folder (``.../profiles/try-<n>/host-<i>``).
    :param steps: ``(start, count)`` to trace from the reports, or None for
        :func:`~airflow_provider_jax.runtime.profile` blocks only.
    """

    def __init__(self, uri: str, steps: tuple[int, int] | None = None) -> None:
        self.uri = uri
        destination = parse_location(uri, "the profile folder")
        # Traced straight into a folder of this host's, or into a temporary one and uploaded.
        self._host_folder = store_for(destination).host_path(destination)
        self._steps = steps
        self._first, self._last = (steps[0] - 1, sum(steps) - 1) if steps else (-2, -2)
        self._tracing: Path | None = None  # the folder of the trace in progress
        self._done = steps is None  # the window was traced, missed or given up (or is none)
        self._uploads: list[threading.Thread] = []
        self._seen: int | None = None  # the last step a report counted
        self._owner: str | None = None  # who started the trace in progress
        self._warned: set[str] = set()
        self._jax_start: Any = None  # jax.profiler's own start_trace and stop_trace, once
        self._jax_stop: Any = None  # wrapped (_guard_the_programs_traces)
        self._skipped_program_trace = False  # its start_trace did nothing: so does its stop

    def at_call(self) -> None:
        """The function is about to be called: a window from step 0 starts here."""
        if self._first == -1 and not self._done:
            self._done = not self.start(WINDOW)

    def at_step(self, step: int | None, given: object = None) -> None:
        """A report of ``step``: start or stop the window (two int compares otherwise).
        ``None``: a step that is no integer (``given``), which is not counted."""
        if step is None:
            self._warn_once(
                "step",
                f"report(step={given!r}): profile_steps counts integer steps, so this report "
                "is not counted for the trace.",
            )
            return
        previous, self._seen = self._seen, step
        if self._done or step < self._first:
            return
        if self._tracing is None:
            if step >= self._last:  # one report went past the whole window
                self._done = True
                self._warn_once("missed", self._missed(previous, step))
                return
            if not self.start(WINDOW):
                self._done = True
                return
        elif self._owner != WINDOW:  # a runtime.profile() block traces: it keeps its trace
            self._done = True
            self._warn(f"{WINDOW}: a profile is already being captured on this host; not traced.")
            return
        if step >= self._last:
            self._done = True
            self.stop()

    def start(self, what: str = "runtime.profile()") -> bool:
        """Start a trace; False (and a warning) where it cannot, as when another trace runs
        (the program's own ``jax.profiler.start_trace``, or a ``runtime.profile()`` block in
        the window): a diagnostic never stops the training."""
        if self._tracing is not None:
            self._warn(f"{what}: a profile is already being captured on this host; not traced.")
            return False
        if self._host_folder is not None:
            folder = Path(self._host_folder)
        else:
            folder = Path(tempfile.mkdtemp(prefix="airflow-jax-profile-"))
        try:
            self._guard_the_programs_traces()
            self._jax_start(str(folder))
        except Exception as err:
            kept = " (the program's own trace runs, and is kept)" if "already" in str(err) else ""
            self._warn(f"{what}: the JAX profiler did not start ({err}){kept}; the job goes on.")
            return False
        self._tracing, self._owner = folder, what
        return True

    def _guard_the_programs_traces(self) -> None:
        """Wrap JAX's ``start_trace``/``stop_trace`` (once): while this profiler traces, the
        program's own calls keep the trace that runs and say so, rather than raise."""
        if self._jax_start is not None:
            return
        import jax
        from jax._src import profiler as jax_profiler

        self._jax_start, self._jax_stop = jax_profiler.start_trace, jax_profiler.stop_trace
        original_start, original_stop = self._jax_start, self._jax_stop

        def start_trace(log_dir: Any, *args: Any, **kwargs: Any) -> Any:
            if self._tracing is None:
                return original_start(log_dir, *args, **kwargs)
            self._skipped_program_trace = True
            self._warn(
                f"the program's jax.profiler.start_trace({str(log_dir)!r}) was not started: "
                f"{self._owner}'s trace was running on this host and is kept; training goes on."
            )
            return None

        def stop_trace(*args: Any, **kwargs: Any) -> Any:
            if self._skipped_program_trace:
                self._skipped_program_trace = False
                return None
            return original_stop(*args, **kwargs)

        for module in (jax.profiler, jax_profiler):  # setattr: JAX's own names, replaced
            setattr(module, "start_trace", start_trace)  # noqa: B010
            setattr(module, "stop_trace", stop_trace)  # noqa: B010

    def stop(self) -> None:
        folder, self._tracing = self._tracing, None
        if folder is None:
            return
        try:
            self._jax_stop()
        except Exception as err:
            self._warn(f"the JAX profiler did not stop cleanly ({err}); the job goes on.")
            return
        if self._host_folder is not None:
            print(f"airflow-jax: profile written to {self.uri}", flush=True)
        else:
            upload = threading.Thread(
                target=self._upload, args=(folder,), name="airflow-jax-profile-upload"
            )
            upload.start()
            self._uploads.append(upload)

    def _missed(self, previous: int | None, step: int) -> str:
        start, count = self._steps or (0, 0)
        came = f"from step {previous} to step {step}" if previous is not None else f"at {step}"
        return (
            f"profile_steps=({start}, {count}) was missed: the reports went {came}, past "
            f"the whole window (steps {start} to {start + count - 1}), so nothing was traced. "
            "Report every step inside the window, or start it on a step you report."
        )

    def _warn(self, text: str) -> None:
        print(f"airflow-jax: warning: {text}", file=sys.stderr, flush=True)

    def _warn_once(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self._warn(text)

    def close(self, timeout: float = UPLOAD_TIMEOUT, stop: bool = True) -> None:
        """Stop a trace still running (the function returned inside the window) and wait for
        the uploads: the pod must not exit before its traces are out. A failed process only
        waits (``stop=False``): its device may never answer the profiler."""
        if stop and self._tracing is not None:
            self._done = True
            self.stop()
        elif not self._done and self._steps is not None:
            start, count = self._steps
            last = "no step" if self._seen is None else f"step {self._seen} last"
            self._warn(
                f"profile_steps=({start}, {count}) was never reached: the reports counted "
                f"{last}, so nothing was traced."
            )
        for upload in self._uploads:
            upload.join(timeout)

    def _upload(self, folder: Path) -> None:
        from airflow_provider_jax.runtime.folder_upload import upload_folder  # not at DAG parse

        try:
            sent = upload_folder(folder, self.uri, UPLOAD_CAP_BYTES)
            print(f"airflow-jax: profile: {sent.summary(self.uri, UPLOAD_CAP_BYTES)}", flush=True)
        except Exception as err:  # a lost profile never fails the training run
            print(f"airflow-jax: the profile was not uploaded: {err}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def capture(profiler: Profiler) -> Iterator[None]:
    """A trace of the block, through ``profiler`` (``runtime.profile()``); where none can
    start, the block runs untraced, with a warning."""
    started = profiler.start()
    try:
        yield
    finally:
        if started:
            profiler.stop()
