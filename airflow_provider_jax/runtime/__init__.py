"""What training code imports: progress reports, the run's output directory, its place in the job.

Stdlib only and cheap to import. It runs inside user images, where the launcher ships it, and
needs neither Airflow nor this provider installed there.

    from airflow_provider_jax.runtime import output_dir, report

    report(step=step, loss=float(loss))
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from airflow_provider_jax.runtime.env import OUTPUT_DIR_ENV, PROCESS_ID_ENV, RESTART_ATTEMPT_ENV
from airflow_provider_jax.runtime.messages import report_line

__all__ = ["output_dir", "process_index", "report", "restart_attempt"]

_last_report: dict[str, Any] | None = None
_watchdog: Any = None  # the hung-host watchdog (runtime.watchdog), when progress_timeout is set


def report(step: int | None = None, **metrics: Any) -> None:
    """Report progress: one line on stdout that the backend shows as ``step 10: loss=0.25``.

    Call it on every process (SPMD code runs the same everywhere); Airflow shows the
    leader's. The leader's last report travels with its result (XCom ``last_report``).
    Values are numbers or strings; JAX and NumPy scalars are converted.
    """
    global _last_report
    body = {"step": _plain("step", step)} if step is not None else {}
    body.update((name, _plain(name, value)) for name, value in metrics.items())
    print(report_line(body), file=sys.stdout, flush=True)
    _last_report = body
    if _watchdog is not None:
        _watchdog.beat()


def _plain(name: str, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if not isinstance(value, float) and callable(getattr(value, "item", None)):
        try:
            value = value.item()  # a JAX or NumPy scalar
        except ValueError:
            raise TypeError(f"report({name}=...) must be a scalar, got an array") from None
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # JSON has no nan/inf
    if isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"report({name}=...) must be a number or a string, got {type(value).__name__}")


def output_dir() -> str | None:
    """The run's output directory (``gs://...`` or a local path), as the operator set it."""
    return os.environ.get(OUTPUT_DIR_ENV) or None


def process_index() -> int:
    """This process's JAX process id (0 is the leader), without importing JAX."""
    return int(os.environ.get(PROCESS_ID_ENV, "0"))


def restart_attempt() -> int:
    """How many times the JobSet restarted before this attempt: 0 on a fresh start."""
    return int(os.environ.get(RESTART_ATTEMPT_ENV) or "0")
