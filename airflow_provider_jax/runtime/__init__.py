"""What training code imports: progress reports, the run's output directory, its place in the job.

Stdlib only and cheap to import. It runs inside user images, where the launcher ships it, and
needs neither Airflow nor this provider installed there.

    from airflow_provider_jax.runtime import output_dir, report

    report(step=step, loss=float(loss))
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from airflow_provider_jax.runtime import preemption, reports
from airflow_provider_jax.runtime.env import (
    HOSTS_PER_SLICE_ENV,
    IN_PLACE_ATTEMPT_ENV,
    LOCAL_CHECKPOINT_DIR_ENV,
    NUM_PROCESSES_ENV,
    OUTPUT_DIR_ENV,
    PROCESS_ID_ENV,
    RESIZE_REASON_ENV,
    RESTART_ATTEMPT_ENV,
)
from airflow_provider_jax.runtime.messages import (
    TOTAL_STEPS_KEY,
    is_count,
    report_line,
    resumed_line,
)
from airflow_provider_jax.runtime.output_paths import (
    PROFILES,
    check_storage_path,
    checkpoints_uri,
    host_uri,
)
from airflow_provider_jax.runtime.preemption import on_preemption

__all__ = [
    "checkpoint_dir",
    "local_checkpoint_dir",
    "num_slices",
    "on_preemption",
    "output_dir",
    "process_index",
    "profile",
    "report",
    "restart_attempt",
    "resumed_from",
    "start_reason",
]

_last_report: dict[str, Any] | None = None
_total_steps: int | None = None  # the operator's total_steps, set by runtime.main
_watchdog: Any = None  # the hung-host watchdog (runtime.watchdog), when progress_timeout is set
_try_number = 0  # the Airflow try this process runs for (runtime.main, from the call)
_profiler: Any = None  # profile_steps' profiler (runtime.profiling), or runtime.profile()'s
_debug_dump: Any = None  # debug_dump's (runtime.debug_dump), armed by runtime.main
_diagnostics_dir: str | None = None  # where profiles and dumps go, when not output_dir
_profiled_steps = 0  # reports with a step given as a JAX array, which profile_steps counts


def report(step: int | None = None, *, total_steps: int | None = None, **metrics: Any) -> None:
    """Report progress: one line on stdout that the backend shows as ``step 10: loss=0.25``,
    or with ``total_steps`` (here, or the operator's) as ``step 10/100 (10%) · 2.5 steps/s ·
    ETA 36s: loss=0.25``.

    Call it on every process (SPMD code runs the same everywhere); Airflow shows the
    leader's. The leader's last report travels with its result (XCom ``last_report``).
    Values are numbers or strings; JAX and NumPy scalars are converted. Pass a JAX array as
    it is (``loss=loss``, not ``float(loss)``): the call never waits for the device, and the
    line is printed once the value is computed. At most ten lines a second are printed, a
    report followed within that time by one of the same metrics in the same tenth of the run
    left out (``runtime.reports``); the last always is.
    """
    body = metrics
    if step is not None:
        if preemption._callbacks and reports.on_device(step):
            step = reports.plain("step", step)  # on_preemption needs the number now
        body["step"] = step
    if total_steps is not None:
        total_steps = reports.plain("total_steps", total_steps)
        if not is_count(total_steps) or total_steps < 1:
            raise TypeError(f"report(total_steps=...) must be a positive int, got {total_steps!r}")
    if step is not None and (total_steps := total_steps or _total_steps) is not None:
        body[TOTAL_STEPS_KEY] = total_steps
    _reporter.submit(body)
    if _profiler is not None and step is not None:
        _profiler.at_step(_profile_step(step), step)
    if preemption._callbacks:
        preemption.check(body.get("step"))


def _profile_step(step: Any) -> int | None:
    """``step`` for profile_steps without waiting for it: a step still on the device counts
    as the number of such reports before it; one that is no integer (``'abc'``, 2.5) is None,
    which the profiler warns of once and does not count."""
    global _profiled_steps
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    if not reports.on_device(step):
        try:
            as_int = int(step)  # a NumPy integer
        except (TypeError, ValueError):
            return None
        return as_int if as_int == step else None
    _profiled_steps += 1
    return _profiled_steps - 1


@contextlib.contextmanager
def profile() -> Iterator[None]:
    """A JAX profiler trace of the block on this host, written where ``profile_steps`` writes
    (``<output_dir>/profiles/try-<n>/host-<i>``), for code that never calls ``report``::

        with runtime.profile():
            state = train_epoch(state)
    """
    from airflow_provider_jax.runtime import profiling

    global _profiler
    if _profiler is None:
        _profiler = profiling.Profiler(_host_folder(PROFILES))
    with profiling.capture(_profiler):
        yield  # runtime.main waits for the upload at the end (a script's exit does too)


def _emit(body: dict[str, Any]) -> None:
    """A finished report: its line, the leader's last report, the watchdog's beat."""
    global _last_report
    print(report_line(body), file=sys.stdout, flush=True)
    _last_report = body
    if _watchdog is not None:
        _watchdog.beat()


_reporter = reports.Reporter(_emit)


def _host_folder(kind: str) -> str:
    """This host's folder for ``kind`` (profiles, debug) in this try and restart:
    ``<output_dir>/<kind>/try-<n>/host-<i>[/restart-<k>]``, or the local run's own folder
    without an output_dir; a ValueError when there is neither."""
    base = _diagnostics_dir or output_dir()
    if not base:
        raise ValueError(f"{kind} go to <output_dir>/{kind}: set output_dir on the operator.")
    return host_uri(base, kind, _try_number, process_index(), restart_attempt())


def output_dir() -> str | None:
    """The run's output directory (``gs://...`` or an absolute path), as the operator set it.
    Anything else is refused here too: a relative path would be written into whatever
    directory the process runs in, and another scheme taken for a local folder."""
    value = os.environ.get(OUTPUT_DIR_ENV) or None
    return check_storage_path("output_dir", value) if value else None


def process_index() -> int:
    """This process's JAX process id (0 is the leader), without importing JAX."""
    return int(os.environ.get(PROCESS_ID_ENV, "0"))


def restart_attempt() -> int:
    """How many times the JobSet restarted before this attempt, recreated or in place: 0 on
    a fresh start."""
    in_place = os.environ.get(IN_PLACE_ATTEMPT_ENV) or "0"
    return int(os.environ.get(RESTART_ATTEMPT_ENV) or "0") + int(in_place)


def num_slices() -> int:
    """How many slices this JobSet has now: fewer than ``num_slices`` while an elastic job
    (``min_slices``) runs without the slices it lost. ``jax.devices()`` and a mesh built from
    them already see it; this is for a program that sizes its batches before JAX starts."""
    hosts = int(os.environ.get(HOSTS_PER_SLICE_ENV) or "1")
    return max(int(os.environ.get(NUM_PROCESSES_ENV) or "1") // max(hosts, 1), 1)


def start_reason() -> str | None:
    """Why this process started: None on a fresh start (a new task try included);
    ``"restart"`` when the JobSet restarted after a failure at the same size; ``"shrunk"`` or
    ``"grew"`` when an elastic job (``min_slices``) was made again at another size, from its
    newest checkpoint."""
    if restart_attempt() > 0:
        return "restart"
    return os.environ.get(RESIZE_REASON_ENV) or None


NO_CHECKPOINT_DIR = (
    "[airflow-jax] warning: checkpoint_dir() is None: this task has no output_dir, so there is "
    "nowhere to checkpoint. Nothing will be saved, a retry starts from scratch, and a sensor "
    "waiting for this run's steps waits until its timeout. Set output_dir= on the task."
)
_told_no_checkpoint_dir: list[bool] = []


def checkpoint_dir() -> str | None:
    """``<output_dir>/checkpoints``: one place for a task instance's checkpoints, the same for
    every JobSet restart and every Airflow retry (keep ``try_number`` out of output_dir).
    None without an ``output_dir``: the leader then says so in the task log, once, since a
    program that asks means to checkpoint."""
    base = output_dir()
    if base is None and not _told_no_checkpoint_dir and process_index() == 0:
        _told_no_checkpoint_dir.append(True)
        print(NO_CHECKPOINT_DIR, file=sys.stderr, flush=True)
    return checkpoints_uri(base) if base else None


def local_checkpoint_dir() -> str | None:
    """This host's local checkpoint tier (``local_checkpoint_size``): a folder in RAM that
    survives an in-place restart and is gone with the run. None without one."""
    return os.environ.get(LOCAL_CHECKPOINT_DIR_ENV) or None


_resumed: list[int | None] = []  # the answer, once asked


def resumed_from(
    step_prefix: str | None = None,
    step_format_fixed_length: int | None = None,
    allow_legacy_atomic_rename: bool = False,
) -> int | None:
    """The newest *finalized* Orbax step in :func:`checkpoint_dir` when first asked (by the
    sensor's rules), or None: resume from it. Later calls give the same answer, so steps this
    run saves do not change it. Name options as given to Orbax's ``CheckpointManager`` and its
    ``AtomicityOptions``."""
    if not _resumed:
        _resumed.append(
            _newest_step(step_prefix, step_format_fixed_length, allow_legacy_atomic_rename)
        )
        if _resumed[0] is not None and process_index() == 0:
            print(resumed_line(_resumed[0]), file=sys.stdout, flush=True)
    return _resumed[0]


def _resumed_step() -> int | None:
    """What :func:`resumed_from` answered, if the program asked (for the leader's message)."""
    return _resumed[0] if _resumed else None


def _newest_step(step_prefix: str | None, length: int | None, legacy: bool) -> int | None:
    from airflow_provider_jax.runtime.orbax_steps import StepNameFormat, StepRules
    from airflow_provider_jax.runtime.stores import parse_location, store_for

    where = checkpoint_dir()
    if where is None:
        return None
    location = parse_location(where, "checkpoint_dir")
    rules = StepRules(StepNameFormat(step_prefix, length), 0, legacy)
    found = store_for(location).newest_step(location, rules)
    return None if found is None else found.step
