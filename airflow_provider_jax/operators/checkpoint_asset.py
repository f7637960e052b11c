"""``checkpoint_asset=`` on the JAX operators: the training task announces the newest finalized
checkpoint it left, with the leader's last report and the JobSet's name, and nothing when it
left none (``checkpoints/asset_events.py``: the events, with and without the step as their
partition key)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from airflow_provider_jax.checkpoints.asset_events import (
    checkpoint_alias,
    publish_step,
    with_checkpoint_outlets,
    withhold,
)
from airflow_provider_jax.runtime.output_paths import CHECKPOINTS, checkpoints_uri

if TYPE_CHECKING:
    from airflow.sdk import Asset, Context

log = logging.getLogger(__name__)

__all__ = ["announce_checkpoint", "checkpoint_alias", "with_checkpoint_outlet"]


def with_checkpoint_outlet(
    task_id: str, asset: Any, output_dir: str | None, outlets: Any
) -> list[Any]:
    """``outlets`` plus what ``asset``'s events go through; wrong input fails at parse."""
    outlets = with_checkpoint_outlets(task_id, asset, outlets)
    if not output_dir:
        raise ValueError(
            f"{task_id}: checkpoint_asset needs output_dir: checkpoints are looked for in "
            f"<output_dir>/{CHECKPOINTS}, where runtime.checkpoint_dir() points the pods."
        )
    return outlets


def announce_checkpoint(
    context: Context,
    asset: Asset,
    output_dir: str | None,
    report: dict[str, Any] | None,
    jobset: str | None,
) -> None:
    """``asset``'s events for the newest finalized step of ``<output_dir>/checkpoints``: its
    step and path, the leader's last report and the JobSet's name; none without a step."""
    # Once the task has run, not at DAG parse (the checkpoint readers are a fifth of it).
    from airflow_provider_jax.checkpoints import (
        CheckpointDirError,
        CheckpointQuery,
        StorageUnavailableError,
        find_newest_finalized,
    )

    if not output_dir:  # rendered empty: nowhere to look
        log.info("No event for asset %r: output_dir is empty.", asset.name)
        withhold(context, asset)
        return
    directory = checkpoints_uri(output_dir)
    try:
        found = find_newest_finalized(CheckpointQuery(checkpoint_dir=directory))
    except (CheckpointDirError, StorageUnavailableError) as exc:
        log.warning("No event for asset %r: could not list %s: %s", asset.name, directory, exc)
        withhold(context, asset)
        return
    if found is None:
        log.info(
            "No event for asset %r: no finalized checkpoint step in %s.", asset.name, directory
        )
        withhold(context, asset)
        return
    extra = {**found.to_xcom(), "checkpoint_dir": directory, "jobset": jobset, "report": report}
    publish_step(context, asset, found.step, extra)
    log.info("Asset %r: step %d at %s.", asset.name, found.step, found.path)
