"""The quickstart's training step in blocks that take turns: reporting the loss every step
as the array (``report(loss=loss)``), as a float converted on the spot (what the quickstart
did before: ``.item()`` waits for the step), and not at all. Each block is timed to its last
step's completion: what ``report()`` costs the loop, in one process, free of the start-up's
noise."""

from __future__ import annotations

import time
from typing import Any


def quickstart_step() -> tuple[Any, Any, Any]:
    """The quickstart's jitted step, compiled, with its parameters and optimizer state."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    features = 8
    rng = np.random.default_rng(seed=0)
    x = jnp.asarray(rng.normal(size=(256, features)).astype(np.float32))
    y = x @ jnp.linspace(-1.0, 1.0, features) + 1.0
    optimizer = optax.adam(0.05)
    params = {"w": jnp.zeros(features), "b": jnp.float32(0)}
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state):
        def loss_fn(p):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    params, opt_state, _ = step(params, opt_state)  # compiled here
    return step, params, opt_state


def train(blocks: int, steps_per_block: int) -> dict[str, Any]:
    """``{"array": [...], "float": [...], "none": [...]}``: each block's seconds per step."""
    import jax

    from airflow_provider_jax.runtime import report

    step, params, opt_state = quickstart_step()
    modes = ["array", "float", "none"]
    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    i = 0
    for block in range(blocks):
        for mode in modes if block % 2 == 0 else reversed(modes):
            started = time.perf_counter()
            for _ in range(steps_per_block):
                i += 1
                params, opt_state, loss = step(params, opt_state)
                if mode == "array":
                    report(step=i, loss=loss)
                elif mode == "float":
                    report(step=i, loss=float(loss))
            jax.block_until_ready(params)
            seconds[mode].append((time.perf_counter() - started) / steps_per_block)
    return seconds
