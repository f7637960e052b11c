"""Orbax's multi-tier (emergency) checkpointing over this job's two tiers: the host-local one
(``local_checkpoint_size``, :func:`~airflow_provider_jax.runtime.local_checkpoint_dir`) and
the persistent one (``<output_dir>/checkpoints``, what the sensor and the Asset events watch).

    from airflow_provider_jax.runtime import multi_tier

    manager = multi_tier.checkpoint_manager(mesh, abstract_state, local_every=10)
    state, step = multi_tier.restore_latest(manager, abstract_state)  # None, None: fresh
    ...
    multi_tier.save(manager, step, state)  # each tier when its interval is due

Orbax decides where a restore comes from: a step that every slice holds locally (or a peer's
replica) first, else the persistent tier. Without a local tier, or with one slice (Orbax keeps
local copies across slices only), this is a plain ``CheckpointManager`` on the persistent tier.
A restore that fails in the emergency manager falls back to the persistent tier and says so;
it never resumes silently from nothing.

The module imports JAX and Orbax when called, never at import: the runtime stays stdlib-only.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from airflow_provider_jax import runtime

ITEM = "state"  # the one item of each step, as Orbax's emergency manager names it


def checkpoint_manager(
    global_mesh: Any,
    abstract_state: Any,
    *,
    local_every: int = 10,
    persistent_every: int = 100,
    max_to_keep: int = 2,
) -> Any:
    """A checkpoint manager over both tiers: every ``local_every`` steps to host memory,
    every ``persistent_every`` steps to ``<output_dir>/checkpoints``.

    :param global_mesh: the training mesh; its first axis replicates across slices.
    :param abstract_state: the state's structure (``jax.eval_shape`` of it).
    :param local_every: steps between saves to the local tier.
    :param persistent_every: steps between saves to the persistent tier.
    :param max_to_keep: checkpoints kept in each tier.
    """
    import orbax.checkpoint as ocp

    persistent = runtime.checkpoint_dir()
    if persistent is None:
        raise RuntimeError("multi-tier checkpointing needs output_dir: the persistent tier.")
    local = runtime.local_checkpoint_dir()
    if local is None:
        options = ocp.CheckpointManagerOptions(
            save_interval_steps=persistent_every, max_to_keep=max_to_keep
        )
        return ocp.CheckpointManager(persistent, options=options, item_names=(ITEM,))
    from absl import flags
    from orbax.checkpoint import multihost
    from orbax.checkpoint.experimental.emergency import checkpoint_manager as emergency

    if not flags.FLAGS.is_parsed():  # it reads absl flags, which only an absl app parses
        flags.FLAGS.mark_as_parsed()

    # The emergency manager maps JAX's process ids to the runtime's and to devices, through
    # the coordination service: once per process, after jax.distributed.initialize().
    if not multihost.is_runtime_to_distributed_ids_initialized():
        multihost.initialize_runtime_to_distributed_ids()
    multihost.initialize_distributed_to_device_ids()
    options = emergency.CheckpointManagerOptions(
        local=emergency.LocalCheckpointOptions(
            save_interval_steps=local_every, max_to_keep=max_to_keep
        ),
        persistent=emergency.PersistentCheckpointOptions(
            save_interval_steps=persistent_every, max_to_keep=max_to_keep
        ),
    )
    return emergency.CheckpointManager(
        local, persistent, global_mesh, abstract_state, options=options
    )


def restore_latest(manager: Any, abstract_state: Any) -> tuple[Any, int | None]:
    """(state, step) of the newest step either tier holds, or (None, None) when neither has
    one. Should restoring through ``manager`` fail, the persistent tier's newest finalized
    step is restored instead, and the log says so."""
    import orbax.checkpoint as ocp

    step = manager.latest_step()
    if step is None:
        return None, None
    try:
        state = _restore(manager, step, abstract_state, ocp)
        _drop_newer_local_steps(manager, step)
        return state, step
    except Exception as err:  # a local tier that a restart left incomplete, a lost peer...
        persistent = runtime.checkpoint_dir()
        plain = ocp.CheckpointManager(persistent, item_names=(ITEM,)) if persistent else None
        fallback = plain.latest_step() if plain is not None else None
        if plain is None or fallback is None:
            raise RuntimeError(
                f"restoring step {step} failed ({type(err).__name__}: {err}) and the "
                f"persistent tier {persistent} has no finalized step to fall back to"
            ) from err
        print(
            f"restoring step {step} failed ({type(err).__name__}: {err}); restoring step "
            f"{fallback} from the persistent tier {persistent} instead",
            file=sys.stderr,
            flush=True,
        )
        state = _restore(plain, fallback, abstract_state, ocp)
        _drop_newer_local_steps(manager, fallback)
        return state, fallback


def _drop_newer_local_steps(manager: Any, step: int) -> None:
    """A host may hold steps newer than the one restored, which not every slice finished
    before the failure: training redoes them, and Orbax refuses to save a step its tier
    already has. This host's tier is its own (a folder in its RAM), so they go."""
    local = runtime.local_checkpoint_dir()
    if local is None or not hasattr(manager, "reload"):
        return
    newer = [d for d in Path(local).iterdir() if d.name.isdigit() and int(d.name) > step]
    for folder in newer:
        shutil.rmtree(folder, ignore_errors=True)
    if newer:
        manager.reload()


def save(manager: Any, step: int, state: Any) -> bool:
    """Save ``state`` at ``step`` to whichever tiers are due (both tiers hold it as the item
    ``state``, as Orbax's emergency manager writes it)."""
    import orbax.checkpoint as ocp

    item = {ITEM: ocp.args.PyTreeSave(state)}
    return bool(manager.save(step, args=ocp.args.Composite(**item)))


def _restore(manager: Any, step: int, abstract_state: Any, ocp: Any) -> Any:
    if type(manager).__module__.startswith("orbax.checkpoint.experimental.emergency"):
        return manager.restore(step).state  # it builds the restore arguments itself
    restore_args = ocp.checkpoint_utils.construct_restore_args(abstract_state)
    item = ocp.args.PyTreeRestore(item=abstract_state, restore_args=restore_args)
    return manager.restore(step, args=ocp.args.Composite(**{ITEM: item}))[ITEM]
