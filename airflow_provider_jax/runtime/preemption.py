"""SIGTERM as a hook: :func:`on_preemption` lets training code save a last checkpoint in the
pod's grace period (``terminationGracePeriodSeconds``) before the kill, then exits 143 so the
slice restarts as after any disruption.

Kubernetes sends SIGTERM when a VM is preempted or maintained, a pod evicted, or the JobSet
restarts. Once ``jax.distributed`` runs, JAX's own preemption service owns SIGTERM: it tells
every process and agrees on one step to stop at (``reached_preemption_sync_point``), and
Orbax's ``CheckpointManager`` saves at that step by itself. So this module never takes the
signal from JAX: it asks JAX at each ``report(step=...)`` whether this step is the agreed one,
and the callbacks run there on every process at once (a collective save works). Without JAX's
service (``initialize_distributed=False``, a program without JAX) a stdlib handler notes the
signal and the callbacks run at the next report of that process.

Stdlib only; JAX is used only when the program has already imported it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

from airflow_provider_jax.runtime import exits
from airflow_provider_jax.runtime.exits import DISRUPTION, EXIT_SIGTERM
from airflow_provider_jax.runtime.messages import failure_message, write_termination

_callbacks: list[Callable[[int], None]] = []
_notice = threading.Event()  # SIGTERM seen by our own handler (when JAX does not own it)
_jax_owns_sigterm = False


def on_preemption(callback: Callable[[int], None]) -> None:
    """Call ``callback(step)`` when this slice is told to stop (SIGTERM), at a
    ``report(step=...)``: the same step on every process when ``jax.distributed`` runs. Report
    every step for it to fire promptly. Then the process exits 143 and the slice restarts."""
    global _jax_owns_sigterm
    if not _callbacks:
        _jax_owns_sigterm = _jax_preemption_service()
        if not _jax_owns_sigterm:
            if threading.current_thread() is not threading.main_thread():
                raise RuntimeError("on_preemption() must first be called from the main thread")
            signal.signal(signal.SIGTERM, lambda signum, frame: _notice.set())
    _callbacks.append(callback)


def _jax_preemption_service() -> bool:
    """Whether JAX's preemption service runs here (and so has SIGTERM)."""
    if "jax" not in sys.modules:
        return False
    import jax

    initialized = getattr(jax.distributed, "is_initialized", lambda: False)()
    return bool(initialized and getattr(jax.config, "jax_enable_preemption_service", False))


def check(step: int | None) -> None:
    """From ``report()``: run the callbacks and exit when this step is where to stop."""
    if not _callbacks or not isinstance(step, int):
        return
    if _jax_owns_sigterm:
        from jax.experimental import multihost_utils

        due = multihost_utils.reached_preemption_sync_point(step)
    else:
        due = _notice.is_set()
    if due:
        _stop(step)


def _stop(step: int) -> None:
    from airflow_provider_jax import runtime  # loaded: it calls check()

    if runtime._watchdog is not None:
        # One report: the preemption's (the save may outlast progress_timeout; the pod's
        # grace period bounds it), or a hang the watchdog is already reporting.
        runtime._watchdog.stop()
    print(f"airflow-jax: preempted (SIGTERM); saving at step {step}", flush=True)
    for callback in _callbacks:
        callback(step)
    error = f"Preempted: SIGTERM, on_preemption ran at step {step}"
    write_termination(failure_message(error, "", DISRUPTION))
    exits.end(EXIT_SIGTERM)  # not a normal exit: jax.distributed's shutdown would wait on peers
