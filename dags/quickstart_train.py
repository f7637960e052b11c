"""Training code for the quickstart DAG: a tiny linear model, fit with optax, data-parallel
over every device of every process in the slice.

The batch is one global array sharded over a mesh of ``jax.devices()``, so the loss (a mean
over the whole batch) and its gradient need an all-reduce across processes each step.
"""

from __future__ import annotations

import os
from typing import Any


def train(
    steps: int = 60,
    learning_rate: float = 0.05,
    report_every: int = 10,
    checkpoint_dir: str | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    disrupt_at_step: int | None = None,
    max_to_keep: int | None = 3,
    seconds_per_step: float = 0.0,
) -> dict[str, Any]:
    """Fit the model; with ``checkpoint_dir``, save an Orbax checkpoint (parameters and
    optimizer state) every ``checkpoint_every`` steps and at the end (every process writes its
    part). With ``resume``, start from the newest finalized step there (after a slice restart
    or an Airflow retry). ``disrupt_at_step`` is a drill: host 1 kills itself at that step on
    the slice's first attempt, as a preempted VM would vanish. ``max_to_keep`` steps are kept
    (None: all); ``seconds_per_step`` paces a demo so that its checkpoints arrive over time."""
    import signal
    import time

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import NamedSharding, PartitionSpec

    from airflow_provider_jax.runtime import process_index, report, restart_attempt, resumed_from

    mesh = _mesh()
    batch_sharding = NamedSharding(mesh, PartitionSpec(("replica", "data")))
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

    optimizer = optax.adam(learning_rate)
    params, opt_state = _initial_state(replicated, optimizer, features)

    @jax.jit
    def step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    state = {"params": params, "opt_state": opt_state}  # the shapes and shardings to restore
    tiers = _tiers(checkpoint_dir, mesh, state, checkpoint_every, max_to_keep or 3)
    manager = tiers or (_checkpoints(checkpoint_dir, max_to_keep) if checkpoint_dir else None)
    start = None
    if tiers is not None and resume:  # the job has a host-local tier: Orbax picks the tier
        from airflow_provider_jax.runtime import multi_tier

        restored, start = multi_tier.restore_latest(tiers, _abstract(state))
        if restored is not None:
            params, opt_state = restored["params"], restored["opt_state"]
    elif manager and resume and (start := resumed_from()) is not None:
        import orbax.checkpoint as ocp

        state = manager.restore(start, args=ocp.args.StandardRestore(state))
        params, opt_state = state["params"], state["opt_state"]
    loss = None
    for i in range((start or 0) + 1, steps + 1):
        if i == disrupt_at_step and restart_attempt() == 0 and process_index() == 1:
            if manager:  # let the async save before it finalize, so the drill is repeatable;
                manager.wait_until_finished()  # a real preemption may land mid-save
            os.kill(os.getpid(), signal.SIGKILL)
        params, opt_state, loss = step(params, opt_state, x, y)
        if seconds_per_step:
            time.sleep(seconds_per_step)
        if i % report_every == 0 or i == steps:
            report(step=i, loss=loss)  # the array: its line waits, the loop does not
        if tiers is not None:  # each tier when its interval is due
            from airflow_provider_jax.runtime import multi_tier

            multi_tier.save(tiers, i, {"params": params, "opt_state": opt_state})
        elif manager and (i == steps or (checkpoint_every and i % checkpoint_every == 0)):
            import orbax.checkpoint as ocp

            state = {"params": params, "opt_state": opt_state}
            manager.save(i, args=ocp.args.StandardSave(state))
    if manager:
        manager.wait_until_finished()
        manager.close()
    return {
        "loss": None if loss is None else float(loss),
        "step": steps,
        "resumed_from": start,
        "processes": jax.process_count(),
        "devices": jax.device_count(),
    }


def evaluate(checkpoint_dir: str, step: int) -> dict[str, Any]:
    """Restore ``step`` from ``checkpoint_dir`` and measure its loss on fresh data."""
    import jax
    import numpy as np
    import optax
    import orbax.checkpoint as ocp
    from jax.sharding import NamedSharding, PartitionSpec

    # Restore onto this job's devices, however many the training slice had.
    replicated = NamedSharding(_mesh(), PartitionSpec())
    params, opt_state = _initial_state(replicated, optax.adam(0.05), 8)
    manager = _checkpoints(checkpoint_dir)
    target = {"params": params, "opt_state": opt_state}
    if "state" in (manager.item_metadata(step) or {}):  # written by runtime.multi_tier
        restore_args = ocp.checkpoint_utils.construct_restore_args(target)
        item = ocp.args.PyTreeRestore(item=target, restore_args=restore_args)
        params = manager.restore(step, args=ocp.args.Composite(state=item)).state["params"]
    else:
        params = manager.restore(step, args=ocp.args.StandardRestore(target))["params"]
    manager.close()
    w, b = np.asarray(params["w"]), float(params["b"])
    features = len(w)
    w_true = np.linspace(-1.0, 1.0, features, dtype=np.float32)
    rng = np.random.default_rng(seed=1_000 + jax.process_index())
    x = rng.normal(size=(256, features)).astype(np.float32)
    y = x @ w_true + 1.0
    return {"step": step, "eval_loss": float(np.mean((x @ w + b - y) ** 2))}


def _initial_state(sharding: Any, optimizer: Any, features: int) -> tuple[Any, Any]:
    """Zero parameters and their optimizer state, every leaf placed with ``sharding``: the
    start of training, and the shapes and placement a restore fills in."""
    import jax
    import numpy as np

    params = jax.device_put({"w": np.zeros(features, np.float32), "b": np.float32(0)}, sharding)
    return params, jax.device_put(optimizer.init(params), sharding)


def _tiers(directory: str | None, mesh: Any, state: Any, every: int, max_to_keep: int) -> Any:
    """With a host-local tier (``local_checkpoint_size``) and the job's own checkpoint_dir:
    Orbax's multi-tier manager (``runtime.multi_tier``), saving to host memory every step and
    to ``directory`` every ``every`` steps; else None."""
    from airflow_provider_jax import runtime
    from airflow_provider_jax.runtime import multi_tier

    if directory is None or directory != runtime.checkpoint_dir():
        return None
    if runtime.local_checkpoint_dir() is None:
        return None
    return multi_tier.checkpoint_manager(
        mesh, _abstract(state), local_every=1, persistent_every=every or 10, max_to_keep=max_to_keep
    )


def _mesh() -> Any:
    """Every device, slices first: the replica axis Orbax's multi-tier manager copies across."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    slices = int(os.environ.get("MEGASCALE_NUM_SLICES", "1"))
    return Mesh(np.array(jax.devices()).reshape(slices, -1), ("replica", "data"))


def _abstract(state: Any) -> Any:
    """The shapes, types and placements of ``state``: what a restore fills in."""
    import jax

    return jax.tree.map(
        lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding), state
    )


def _checkpoints(directory: str, max_to_keep: int | None = 3) -> Any:
    import orbax.checkpoint as ocp

    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep)
    return ocp.CheckpointManager(directory, options=options)
