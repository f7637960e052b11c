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


def lose_host_1_once_in_place(lost: str) -> dict:
    """As :func:`lose_host_1_once`, once: until the file ``lost`` (shared with the test)
    exists, not by the restart attempt, which after an in-place restart the kubelet may hand
    the container as it was before (docs/testing.md). Returns the attempt the runtime read."""
    import jax

    from airflow_provider_jax.runtime import restart_attempt

    if not os.path.exists(lost) and jax.process_index() == 1:
        open(lost, "w").close()
        lose_this_host()
    return {"attempt": restart_attempt(), "processes": jax.process_count()}
