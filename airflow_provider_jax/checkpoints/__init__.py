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
    agcs_folders,
    find_newest_gcs,
    gcs_folders,
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
from airflow_provider_jax.runtime.orbax_steps import find_newest_local, list_local_folders

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
    "anaming_hint",
    "check_checkpoint_dir",
    "find_newest_finalized",
    "naming_hint",
]


def find_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Blocking check, for ``poke``."""
    check_checkpoint_dir(query.checkpoint_dir)
    if query.is_gcs:
        return find_newest_gcs(query, retry)
    return find_newest_local(
        query.checkpoint_dir, query.name_format, query.min_step, query.allow_legacy_atomic_rename
    )


async def afind_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Non-blocking check, for the triggerer's event loop."""
    check_checkpoint_dir(query.checkpoint_dir)
    if query.is_gcs:
        return await afind_newest_gcs(query, retry)
    return await asyncio.to_thread(
        find_newest_local,
        query.checkpoint_dir,
        query.name_format,
        query.min_step,
        query.allow_legacy_atomic_rename,
    )


def naming_hint(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY) -> str:
    """When no step matched: folders that look like steps named another way, and the
    argument that would match them (empty when there are none). One listing more, made only
    when nothing was found."""
    if query.is_gcs:
        folders = gcs_folders(query, retry)
    else:
        folders = list_local_folders(query.checkpoint_dir)
    return query.name_format.hint(folders)


async def anaming_hint(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY) -> str:
    """:func:`naming_hint` in the triggerer."""
    if query.is_gcs:
        folders = await agcs_folders(query, retry)
    else:
        folders = await asyncio.to_thread(list_local_folders, query.checkpoint_dir)
    return query.name_format.hint(folders)
