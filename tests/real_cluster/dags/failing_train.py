"""Training code that fails on one host, as a bug would."""

from __future__ import annotations


def fail_on_host_1() -> None:
    import jax

    if jax.process_index() == 1:
        raise ValueError("host 1 found a NaN in its shard")
    jax.numpy.ones(4).block_until_ready()


def return_nan() -> dict[str, float]:
    """Trains, then returns what JSON cannot carry: a result error, not a retry."""
    import jax

    loss = float(jax.numpy.ones(4).sum()) * float("nan")
    return {"loss": loss, "step": 10}
