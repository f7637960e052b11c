"""Find the newest *finalized* Orbax checkpoint step in a checkpoint directory, wherever it is
stored (GCS, a local directory: its store's driver lists it).

Shared by ``OrbaxCheckpointSensor.poke`` (sync) and ``OrbaxCheckpointTrigger`` (async). The
rules of "finalized" live in :mod:`airflow_provider_jax.runtime.orbax_steps`, which the pods'
``runtime.resumed_from()`` uses too.
"""

from __future__ import annotations

from airflow_provider_jax.checkpoints.query import (
    COMMIT_SUCCESS_FILE,
    TMP_DIR_SUFFIX,
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    StepNameFormat,
    StorageUnavailableError,
    check_checkpoint_dir,
)
from airflow_provider_jax.stores import DEFAULT_RETRY, RetryPolicy, store

__all__ = [
    "COMMIT_SUCCESS_FILE",
    "DEFAULT_RETRY",
    "TMP_DIR_SUFFIX",
    "CheckpointDirError",
    "CheckpointQuery",
    "FinalizedStep",
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
    where = query.location
    return store(where, query.access).find_newest(where, query.rules, retry)


async def afind_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Non-blocking check, for the triggerer's event loop."""
    where = query.location
    return await store(where, query.access).afind_newest(where, query.rules, retry)


def naming_hint(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY) -> str:
    """When no step matched: folders that look like steps named another way, and the
    argument that would match them (empty when there are none). One listing more, made only
    when nothing was found."""
    where = query.location
    return query.name_format.hint(store(where, query.access).folders(where, retry))


async def anaming_hint(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY) -> str:
    """:func:`naming_hint` in the triggerer."""
    where = query.location
    return query.name_format.hint(await store(where, query.access).afolders(where, retry))
