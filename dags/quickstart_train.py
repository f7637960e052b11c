"""Training code for the quickstart DAG: a tiny linear model, fit with optax, data-parallel
over every device of every process in the slice.

The batch is one global array sharded over a mesh of ``jax.devices()``, so the loss (a mean
over the whole batch) and its gradient need an all-reduce across processes each step.
"""

from __future__ import annotations

from typing import Any


def train(steps: int = 60, learning_rate: float = 0.05, report_every: int = 10) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from airflow_provider_jax.runtime import report

    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch_sharding = NamedSharding(mesh, PartitionSpec("data"))
    replicated = NamedSharding(mesh, PartitionSpec())

    # y = x @ w_true + 1 with a little noise; each process draws its own part of the batch.
    features, rows_per_device = 8, 32
    w_true = np.linspace(-1.0, 1.0, features, dtype=np.float32)
    rng = np.random.default_rng(seed=jax.process_index())
    x_local = rng.normal(size=(rows_per_device * jax.local_device_count(), features))
    x_local = x_local.astype(np.float32)
    y_local = x_local @ w_true + 1.0 + 0.01 * rng.normal(size=len(x_local)).astype(np.float32)
    x = jax.make_array_from_process_local_data(batch_sharding, x_local)
    y = jax.make_array_from_process_local_data(batch_sharding, y_local)

    params = jax.device_put({"w": np.zeros(features, np.float32), "b": np.float32(0)}, replicated)
    optimizer = optax.adam(learning_rate)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    for i in range(1, steps + 1):
        params, opt_state, loss = step(params, opt_state, x, y)
        if i % report_every == 0 or i == steps:
            report(step=i, loss=float(loss))
    return {
        "loss": float(loss),
        "step": steps,
        "processes": jax.process_count(),
        "devices": jax.device_count(),
    }
