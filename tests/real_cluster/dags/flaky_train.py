"""Training code whose host 1 dies on the first attempt only, killed outright, as a host lost
to a hardware fault does."""

from __future__ import annotations

import os
import signal


def lose_host_1_once() -> dict:
    import jax

    attempt = int(os.environ.get("AIRFLOW_JAX_RESTART_ATTEMPT", "0"))
    if attempt == 0 and jax.process_index() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"attempt": attempt, "processes": jax.process_count()}
