"""Training code that holds its slice until the test opens a gate (a file on this machine)."""

from __future__ import annotations

import os
import time


def hold_until(gate: str) -> dict:
    import jax

    while not os.path.exists(gate):
        time.sleep(0.2)
    # Seen: a test that opened the gate can wait for this instead of for time to pass.
    open(f"{gate}.seen-{jax.process_index()}", "w").close()
    return {"processes": jax.process_count(), "gate": gate}


def hold_until_placed(gate: str) -> dict:
    """``hold_until`` without JAX (``initialize_distributed=False``): for jobs of more hosts
    than this machine can start JAX processes for, where only the placement is tested."""
    while not os.path.exists(gate):
        time.sleep(0.2)
    open(f"{gate}.seen-{os.environ['JAX_PROCESS_ID']}", "w").close()
    return {"processes": int(os.environ["JAX_NUM_PROCESSES"]), "gate": gate}
