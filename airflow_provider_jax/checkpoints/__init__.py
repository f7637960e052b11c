"""Find the newest *finalized* Orbax checkpoint step in GCS or in a local directory.

Shared by ``OrbaxCheckpointSensor.poke`` (sync) and ``OrbaxCheckpointTrigger`` (async). The
rules of "finalized" live in :mod:`airflow_provider_jax.runtime.orbax_steps`, which the pods'
``runtime.resumed_from()`` uses too.
"""

from __future__ import annotations

import asyncio

from airflow_provider_jax.checkpoints.gcs_drivers import (
    DEFAULT_RETRY,
    RetryPolicy,
    afind_newest_gcs,
    find_newest_gcs,
)
from airflow_provider_jax.checkpoints.query import (
    COMMIT_SUCCESS_FILE,
    TMP_DIR_SUFFIX,
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    GcsLocation,
    StepNameFormat,
    StorageUnavailableError,
    check_checkpoint_dir,
)
from airflow_provider_jax.runtime.orbax_steps import find_newest_local

__all__ = [
    "COMMIT_SUCCESS_FILE",
    "DEFAULT_RETRY",
    "TMP_DIR_SUFFIX",
    "CheckpointDirError",
    "CheckpointQuery",
    "FinalizedStep",
    "GcsLocation",
    "RetryPolicy",
    "StepNameFormat",
    "StorageUnavailableError",
    "afind_newest_finalized",
    "check_checkpoint_dir",
    "find_newest_finalized",
]


def find_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Blocking check, for ``poke``."""
    check_checkpoint_dir(query.checkpoint_dir)
    if query.is_gcs:
        return find_newest_gcs(query, retry)
    return find_newest_local(query.checkpoint_dir, query.name_format, query.min_step)


async def afind_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Non-blocking check, for the triggerer's event loop."""
    check_checkpoint_dir(query.checkpoint_dir)
    if query.is_gcs:
        return await afind_newest_gcs(query, retry)
    return await asyncio.to_thread(
        find_newest_local, query.checkpoint_dir, query.name_format, query.min_step
    )
