"""A finalized checkpoint step as asset events (``checkpoint_asset=`` on the JAX operators and
on ``OrbaxCheckpointSensor``): two events per step, to the same asset, and none without one.

- Through an ``AssetAlias``, without a partition key: what a ``schedule=[asset]`` consumer
  gets, as it always has.
- On the asset itself, with the step as its partition key (``"1200"``): what a consumer on
  ``PartitionedAssetTimetable`` gets, one run per step, which a run for one step can redo.

Airflow queues a partition-aware consumer only for an event with a partition key, and any other
consumer only for one without (``AssetManager`` in Airflow 3.3), so each kind gets one event.
A partition key goes only on a concrete asset's event (``add_partitions`` refuses an alias's),
so the asset is declared as an outlet beside the alias (which also keeps it in the lineage and
active). A declared outlet gets an event on every success: a task that found no finalized step
takes the asset out of its outlets before it ends (:func:`withhold`), and there is no event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

if TYPE_CHECKING:
    from airflow.sdk import Context

ALIAS_PREFIX = "jax-checkpoints:"


def checkpoint_alias(asset: Asset) -> AssetAlias:
    """The alias the task declares as an outlet, through which it emits ``asset``'s event."""
    return AssetAlias(name=f"{ALIAS_PREFIX}{asset.name}")


def partition_key(step: int) -> str:
    """A step as the partition key of its event: its decimal digits, as Orbax names it."""
    return str(step)


def with_checkpoint_outlets(task_id: str, asset: Any, outlets: Any) -> list[Any]:
    """``outlets`` plus the alias and ``asset``; wrong input fails at parse."""
    if not isinstance(asset, Asset):
        raise TypeError(f"{task_id}: checkpoint_asset must be an Asset, got {asset!r}.")
    if outlets is None:
        outlets = []
    elif not isinstance(outlets, list | tuple):
        outlets = [outlets]
    if any(_same(o, asset) for o in outlets):
        raise ValueError(
            f"{task_id}: checkpoint_asset {asset.name!r} is in outlets= too; leave it out of "
            "outlets=: the task emits its events itself, and none when there is no step."
        )
    return [*outlets, checkpoint_alias(asset), asset]


def publish_step(context: Context, asset: Asset, step: int, extra: dict[str, Any]) -> None:
    """``asset``'s two events for finalized ``step``, each with ``extra``."""
    context["outlet_events"][checkpoint_alias(asset)].add(asset, extra=extra)
    partitioned = context["outlet_events"][asset]
    partitioned.extra.update(extra)
    partitioned.add_partitions(partition_key(step))


def withhold(context: Context, asset: Asset) -> None:
    """No event for ``asset`` from this try: it found no finalized step."""
    task = context["task"]
    task.outlets = [o for o in task.outlets if not _same(o, asset)]


def _same(outlet: Any, asset: Asset) -> bool:
    return isinstance(outlet, Asset) and (outlet.name, outlet.uri) == (asset.name, asset.uri)
