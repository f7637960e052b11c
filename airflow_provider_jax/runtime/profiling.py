"""JAX profiler traces on every host: a window of steps (``profile_steps``), counted by the
function's own ``report(step=...)`` calls, or a block of code (``runtime.profile()``).

Each trace is written where TensorBoard's profile plugin and XProf look for one
(``plugins/profile/<run>/<host>.xplane.pb``), below ``<output_dir>/profiles/try-<n>/host-<i>``:
straight into that folder locally, through a folder on the host and an upload on GCS (the
upload runs on its own thread, so the loop goes on at once). The window costs nothing outside
it: a report compares one int, and nothing here waits on the device.

Which steps: a report of step ``s`` follows the work of step ``s``, so the trace starts at the
report of step ``start - 1`` (at the call, for ``start == 0``, compilation included) and stops
at the report of step ``start + count - 1``.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from airflow_provider_jax.runtime.location import Location

MAX_PROFILE_STEPS = 100  # a trace of more steps is too big to open (XProf loads it whole)
UPLOAD_CAP_BYTES = 2 * 2**30  # one host's traces of one attempt
UPLOAD_TIMEOUT = 120.0  # s: a finished function waits this long for its last upload


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
        self._destination = Location.parse(uri, "the profile folder")
        self._first, self._last = (steps[0] - 1, sum(steps) - 1) if steps else (-2, -2)
        self._tracing: Path | None = None  # the folder of the trace in progress
        self._done = steps is None  # the window was traced (or there is none)
        self._uploads: list[threading.Thread] = []

    def at_call(self) -> None:
        """The function is about to be called: a window from step 0 starts here."""
        if self._first == -1 and not self._done:
            self.start()

    def at_step(self, step: int) -> None:
        """A report of ``step``: start or stop the window (two int compares otherwise)."""
        if self._done or step < self._first:
            return
        if self._tracing is None:
            self.start()
        if step >= self._last:
            self._done = True
            self.stop()

    def start(self) -> None:
        import jax

        if self._tracing is not None:
            raise RuntimeError("a profile is already being captured on this host")
        if self._destination.is_gcs:
            folder = Path(tempfile.mkdtemp(prefix="airflow-jax-profile-"))
        else:
            folder = Path(self._destination.key)
        jax.profiler.start_trace(str(folder))
        self._tracing = folder

    def stop(self) -> None:
        import jax

        folder, self._tracing = self._tracing, None
        if folder is None:
            return
        jax.profiler.stop_trace()
        if self._destination.is_gcs:
            upload = threading.Thread(
                target=self._upload, args=(folder,), name="airflow-jax-profile-upload"
            )
            upload.start()
            self._uploads.append(upload)
        else:
            print(f"airflow-jax: profile written to {self.uri}", flush=True)

    def close(self, timeout: float = UPLOAD_TIMEOUT, stop: bool = True) -> None:
        """Stop a trace still running (the function returned inside the window) and wait for
        the uploads: the pod must not exit before its traces are out. A failed process only
        waits (``stop=False``): its device may never answer the profiler."""
        if stop and self._tracing is not None:
            self._done = True
            self.stop()
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
    """A trace of the block, through ``profiler`` (``runtime.profile()``)."""
    profiler.start()
    try:
        yield
    finally:
        profiler.stop()
