"""``checkpoint_asset=``: a training task announces the newest finalized checkpoint it left,
as an asset event, and no event when it left none.

A plain ``outlets=[Asset(...)]`` always gets an event when the task succeeds. The event is
emitted here through an ``AssetAlias`` instead, so "no finalized step" can mean "no event".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

from airflow_provider_jax.runtime.output_paths import CHECKPOINTS, checkpoints_uri

if TYPE_CHECKING:
    from airflow.sdk import Context

log = logging.getLogger(__name__)

ALIAS_PREFIX = "jax-checkpoints:"


def checkpoint_alias(asset: Asset) -> AssetAlias:
    """The alias the task declares as an outlet, through which it emits ``asset``'s event."""
    return AssetAlias(name=f"{ALIAS_PREFIX}{asset.name}")


def with_checkpoint_outlet(
    task_id: str, asset: Any, output_dir: str | None, outlets: Any
) -> list[Any]:
    """``outlets`` plus the alias for ``asset``; wrong input fails at parse."""
    if not isinstance(asset, Asset):
        raise TypeError(f"{task_id}: checkpoint_asset must be an Asset, got {asset!r}.")
    if not output_dir:
        raise ValueError(
            f"{task_id}: checkpoint_asset needs output_dir: checkpoints are looked for in "
            f"<output_dir>/{CHECKPOINTS}, where runtime.checkpoint_dir() points the pods."
        )
    if outlets is None:
        outlets = []
    elif not isinstance(outlets, (list, tuple)):
        outlets = [outlets]
    return [*outlets, checkpoint_alias(asset)]


def announce_checkpoint(
    context: Context,
    asset: Asset,
    output_dir: str,
    report: dict[str, Any] | None,
    jobset: str | None,
) -> None:
    """Attach the newest finalized step of ``<output_dir>/checkpoints`` to ``asset``'s event:
    its step and path, the leader's last report and the JobSet's name."""
    # Once the task has run, not at DAG parse (the checkpoint readers are a fifth of it).
    from airflow_provider_jax.checkpoints import (
        CheckpointDirError,
        CheckpointQuery,
        StorageUnavailableError,
        find_newest_finalized,
    )

    directory = checkpoints_uri(output_dir)
    try:
        found = find_newest_finalized(CheckpointQuery(checkpoint_dir=directory))
    except (CheckpointDirError, StorageUnavailableError) as exc:
        log.warning("No event for asset %r: could not list %s: %s", asset.name, directory, exc)
        return
    if found is None:
        log.info(
            "No event for asset %r: no finalized checkpoint step in %s.", asset.name, directory
        )
        return
    extra = {**found.to_xcom(), "checkpoint_dir": directory, "jobset": jobset, "report": report}
    context["outlet_events"][checkpoint_alias(asset)].add(asset, extra=extra)
    log.info("Asset %r: step %d at %s.", asset.name, found.step, found.path)
