"""Training code that runs on however many slices it gets (``min_slices``): the pattern of
``elastic_training.py``.

Three habits make a program elastic:

- the mesh is built from ``jax.devices()``, so a job made again on fewer slices has a smaller
  mesh and nothing else changes;
- the global batch is held constant: each step's batch is the same rows whatever the size,
  split over the devices there are (``GLOBAL_BATCH // jax.device_count()`` rows each), so the
  optimisation goes on as it would have on every slice;
- the step count goes on from the newest checkpoint, restored onto the mesh of now: Orbax
  reshards each array to the sharding the restore asks for.

The parameters are sharded over the devices, so a restore after a change of size really
reshards them.
"""

from __future__ import annotations

from typing import Any

GLOBAL_BATCH = 256  # rows per step, whatever the number of slices
FEATURES = 64  # divisible by every device count the mesh may have here


def train(
    steps: int = 60,
    checkpoint_every: int = 5,
    learning_rate: float = 0.1,
    row_seconds: float = 0.0,
) -> dict[str, Any]:
    """Fit ``y = x @ w_true`` by SGD, checkpointing to ``runtime.checkpoint_dir()`` every
    ``checkpoint_every`` steps and resuming from the newest finalized step there.
    ``row_seconds`` stands in for a device's compute per row of the batch: the same rows over
    fewer devices take longer, as they would on fewer slices."""
    import time

    import jax
    import jax.numpy as jnp
    import numpy as np
    import orbax.checkpoint as ocp
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    from airflow_provider_jax import runtime

    mesh = Mesh(np.array(jax.devices()), ("data",))  # every device of every slice there is
    rows = NamedSharding(mesh, P("data"))  # the batch, split by rows
    sharded = NamedSharding(mesh, P("data"))  # the parameters, split too
    w_true = np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32)

    def batch(step: int) -> tuple[jax.Array, jax.Array]:
        """Step ``step``'s global batch (the same rows at any size); each process puts its
        own devices' rows."""
        rng = np.random.default_rng(seed=step)
        x = rng.normal(size=(GLOBAL_BATCH, FEATURES)).astype(np.float32)
        y = x @ w_true
        per_process = GLOBAL_BATCH // jax.process_count()
        mine = slice(jax.process_index() * per_process, (jax.process_index() + 1) * per_process)
        return (
            jax.make_array_from_process_local_data(rows, x[mine]),
            jax.make_array_from_process_local_data(rows, y[mine]),
        )

    @jax.jit
    def sgd(w: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - learning_rate * grad, loss

    manager = ocp.CheckpointManager(
        runtime.checkpoint_dir(), options=ocp.CheckpointManagerOptions(max_to_keep=3)
    )
    target = {"w": jax.ShapeDtypeStruct((FEATURES,), jnp.float32, sharding=sharded)}
    start = runtime.resumed_from()
    if start is not None:  # onto this mesh, whatever the mesh that saved it
        w = manager.restore(start, args=ocp.args.StandardRestore(target))["w"]
    else:
        w = jax.device_put(jnp.zeros(FEATURES, jnp.float32), sharded)
    slices = runtime.num_slices()
    loss = None
    for step in range((start or 0) + 1, steps + 1):
        w, loss = sgd(w, *batch(step))
        if row_seconds:
            time.sleep(row_seconds * GLOBAL_BATCH / jax.device_count())
        runtime.report(step=step, loss=loss, slices=slices)
        if step % checkpoint_every == 0 or step == steps:
            manager.save(step, args=ocp.args.StandardSave({"w": w}))
    manager.wait_until_finished()
    manager.close()
    full = multihost_utils.process_allgather(w, tiled=True)
    return {
        "loss": None if loss is None else float(loss),
        "w_error": float(np.max(np.abs(np.asarray(full) - w_true))),
        "w_sum": float(np.sum(np.asarray(full))),
        "slices": slices,
        "start_reason": runtime.start_reason(),
        "resumed_from": start,
        "devices": jax.device_count(),
    }
