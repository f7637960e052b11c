"""Training code whose host 1 dies with a restartable exit code on the first attempt only, as
a host lost to a hardware fault does."""

from __future__ import annotations

import os


def lose_host_1_once() -> dict:
    import jax

    attempt = int(os.environ.get("AIRFLOW_JAX_RESTART_ATTEMPT", "0"))
    if attempt == 0 and jax.process_index() == 1:
        os._exit(42)  # xpk's and MaxText's "restart me"
    return {"attempt": attempt, "processes": jax.process_count()}
