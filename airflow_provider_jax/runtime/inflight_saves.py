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
so no Orbax object has to be found otherwise. Stdlib only, like the rest of the runtime.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

ORBAX_PACKAGE = "orbax.checkpoint"


def saves_in_flight() -> list[tuple[Any, str]]:
    """``(owner, what)`` for each Orbax save thread still running, ``what`` naming the step:
    first the checkpointers' ``async_save`` threads (``what``: the step's folder), whose wait
    raises this host's own failure at once; then the ``CheckpointManager``'s finalize threads
    (``what``: ``step N``), which may wait at a barrier for every host, a failed one too."""
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
        if callable(getattr(thread, "step", None)):
            found.append((1, owner, f"step {thread.step()}"))
        else:
            folder = next(iter(getattr(thread, "_args", ())), None)
            found.append((0, owner, str(folder) if folder is not None else "a checkpoint"))
    return [(owner, what) for _, owner, what in sorted(found, key=lambda item: item[0])]


def finish_saves() -> None:
    """Wait for every Orbax save this process still has in flight. A save that fails raises
    its own exception, with a note that names the step."""
    for owner, what in saves_in_flight():
        print(
            f"[airflow-jax] Orbax's save of {what} was still being written when the function "
            "returned: waiting for it to finish.",
            flush=True,
        )
        try:
            owner.wait_until_finished()
        except BaseException as err:
            err.add_note(
                f"Orbax's save of {what} was still being written when the function returned, "
                "and it failed: that step was not saved."
            )
            raise
