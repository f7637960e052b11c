"""Orbax saves still being written when the user's function returns: finished before the job
is reported done, or the job fails naming the step.

An async ``CheckpointManager.save`` returns at once and finishes in a background thread:
Orbax's ``save_finalize`` thread (a ``_FinalizeThread``, which knows its step) or, for an
``AsyncCheckpointer`` used alone, its ``async_save`` thread. Nothing at exit waits for them
usefully: ``concurrent.futures`` shuts its executors down before Python joins other threads
("cannot schedule new futures after shutdown"), and the runtime ends with ``os._exit``. The
step would be left as a temporary folder, a downstream sensor waiting for it forever, and the
task would succeed. So each process waits for its own saves through their owners'
``wait_until_finished()``, Orbax's own call, which re-raises what the save raised.

The owner is the bound method a thread runs (``Thread._target.__self__``, set while it runs),
so no Orbax object has to be found otherwise. It is not joined while it runs: a primary host
whose commit failed would wait in its finalize thread's barrier for hosts that wait in
another (``CheckpointManager._finalize`` syncs in its ``finally``), for Orbax's whole barrier
timeout. Each owner's ``check_for_errors()`` is asked instead until the threads end, so a
host's own failure ends it at once. (Where the primary host alone fails to commit, Orbax's
finalize thread takes the error first and the hosts meet no barrier until Orbax's own barrier
timeout: the job then fails at that timeout, as the same program would.) Stdlib only, like the
rest of the runtime.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

ORBAX_PACKAGE = "orbax.checkpoint"
POLL_S = 0.1  # how often a save in flight is asked for its errors


def saves_in_flight() -> list[tuple[Any, str, threading.Thread]]:
    """``(owner, what, thread)`` for each Orbax save thread still running, ``what`` naming
    the step: ``step N`` for a ``CheckpointManager``'s finalize thread, else the step's
    folder (a checkpointer's ``async_save`` thread)."""
    if ORBAX_PACKAGE not in sys.modules:
        return []
    found = []
    for thread in threading.enumerate():
        owner = getattr(getattr(thread, "_target", None), "__self__", None)
        if not (
            thread.is_alive()
            and owner is not None
            and type(owner).__module__.startswith(ORBAX_PACKAGE)
            and callable(getattr(owner, "wait_until_finished", None))
        ):
            continue
        step = getattr(thread, "step", None)  # a CheckpointManager's _FinalizeThread
        if callable(step):
            found.append((owner, f"step {step()}", thread))
        else:
            folder = next(iter(getattr(thread, "_args", ())), None)
            found.append((owner, str(folder) if folder is not None else "a checkpoint", thread))
    return found


def finish_saves() -> None:
    """Wait for every Orbax save this process still has in flight. A save that fails raises
    its own exception, with a note that names the step."""
    pending = saves_in_flight()
    for _, what, _ in pending:
        print(
            f"[airflow-jax] Orbax's save of {what} was still being written when the function "
            "returned: waiting for it to finish.",
            flush=True,
        )
    while True:
        for owner, what, _ in pending:
            _raising_for(owner.check_for_errors, what)
        if not any(thread.is_alive() for _, _, thread in pending):
            break
        time.sleep(POLL_S)
    for owner, what, _ in pending:  # all done: what is left to raise, and Orbax's clean-up
        _raising_for(owner.wait_until_finished, what)


def _raising_for(call: Any, what: str) -> None:
    try:
        call()
    except BaseException as err:
        err.add_note(
            f"Orbax's save of {what} was still being written when the function returned, "
            "and it failed: that step was not saved."
        )
        raise
