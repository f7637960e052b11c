"""Training code whose host 1 dies on the first attempt only, killed outright, as a host lost
to a hardware fault does."""

from __future__ import annotations

import os

from host_loss import lose_this_host


def lose_host_1_once() -> dict:
    import jax

    attempt = int(os.environ.get("AIRFLOW_JAX_RESTART_ATTEMPT", "0"))
    if attempt == 0 and jax.process_index() == 1:
        lose_this_host()
    return {"attempt": attempt, "processes": jax.process_count()}


def lose_host_1_once_in_place() -> dict:
    """As :func:`lose_host_1_once`, counting restarts as the runtime does: in place too."""
    import jax

    from airflow_provider_jax.runtime import restart_attempt

    attempt = restart_attempt()
    if attempt == 0 and jax.process_index() == 1:
        lose_this_host()
    return {"attempt": attempt, "processes": jax.process_count()}
