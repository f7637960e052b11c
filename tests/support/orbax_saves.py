"""Write real Orbax checkpoints with ``CheckpointManager`` (jax and orbax load on first use)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Layout:
    """How a run names its steps and which items it saves (None: one unnamed item)."""

    items: Sequence[str] | None = None
    step_prefix: str | None = None
    step_format_fixed_length: int | None = None

    def step_name(self, step: int) -> str:
        digits = (
            f"{step:0{self.step_format_fixed_length}d}"
            if self.step_format_fixed_length
            else str(step)
        )
        return f"{self.step_prefix}_{digits}" if self.step_prefix else digits

    @property
    def item_names(self) -> Sequence[str]:
        return self.items or ("default",)

    @property
    def sensor_kwargs(self) -> dict[str, Any]:
        return {
            "step_prefix": self.step_prefix,
            "step_format_fixed_length": self.step_format_fixed_length,
        }


SINGLE_ITEM = Layout()
MULTI_ITEM_PREFIXED_PADDED = Layout(
    items=("params", "opt_state"), step_prefix="ckpt", step_format_fixed_length=6
)


def save_steps(directory: str, steps: Iterable[int], layout: Layout = SINGLE_ITEM) -> None:
    """Save each step synchronously; a failed write raises like it would in training."""
    import jax.numpy as jnp
    import orbax.checkpoint as ocp

    options = ocp.CheckpointManagerOptions(
        max_to_keep=None,
        step_prefix=layout.step_prefix,
        step_format_fixed_length=layout.step_format_fixed_length,
        enable_async_checkpointing=False,
        create=True,
    )
    manager = ocp.CheckpointManager(directory, item_names=layout.items, options=options)
    try:
        for step in steps:
            state = {"w": jnp.full((4, 4), float(step)), "b": jnp.arange(3) + step}
            if layout.items is None:
                args = ocp.args.StandardSave(state)
            else:
                args = ocp.args.Composite(
                    **{name: ocp.args.StandardSave(state) for name in layout.items}
                )
            manager.save(step, args=args)
        manager.wait_until_finished()
    finally:
        manager.close()
