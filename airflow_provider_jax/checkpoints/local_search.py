"""The newest finalized step in a local directory (or a gcsfuse mount).

orbax-checkpoint 0.12.x writes a local step as ``<step>.orbax-checkpoint-tmp[-<n>]`` and renames
it. Since 0.12.3 the commit marker is written before the rename; older local checkpoints have
none, so in a directory where no step carries a marker, a non-temporary step directory counts as
finalized. Deleting a step is not atomic, so a step must also still hold an item directory.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from airflow_provider_jax.checkpoints.query import (
    COMMIT_SUCCESS_FILE,
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _LocalStep:
    marker_mtime: float | None
    has_items: bool


def _read_local_step(path: Path) -> _LocalStep | None:
    """Top level of one step directory; None if it vanished meanwhile."""
    marker_mtime: float | None = None
    has_items = False
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name == COMMIT_SUCCESS_FILE:
                    marker_mtime = entry.stat().st_mtime
                elif entry.is_dir():
                    has_items = True
    except (FileNotFoundError, NotADirectoryError):
        return None
    return _LocalStep(marker_mtime, has_items)


def find_newest_local(query: CheckpointQuery) -> FinalizedStep | None:
    """Newest finalized step under a local directory; None while there is none (or no dir)."""
    root = Path(query.checkpoint_dir)
    names = query.name_format
    try:
        with os.scandir(root) as entries:
            steps = [
                (step, entry.name)
                for entry in entries
                if (step := names.parse(entry.name)) is not None and entry.is_dir()
            ]
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise CheckpointDirError(f"checkpoint_dir {str(root)!r} is not a directory") from exc
    except PermissionError as exc:
        raise CheckpointDirError(f"No permission to list checkpoint_dir {str(root)!r}") from exc

    # A marker on any step means orbax >= 0.12.3 wrote this directory: then a step without one
    # is being written or deleted.
    legacy: FinalizedStep | None = None
    markers_seen = False
    for step, name in sorted(steps, reverse=True):
        path = root / name
        contents = _read_local_step(path)
        if contents is None:
            continue
        if contents.marker_mtime is not None:
            markers_seen = True
            if step < query.min_step:
                return None
            if contents.has_items:
                return FinalizedStep(step, str(path), _from_timestamp(contents.marker_mtime))
            log.info("Step %s has its marker but no items: being deleted", path)
        elif not markers_seen and legacy is None and contents.has_items and step >= query.min_step:
            try:
                legacy = FinalizedStep(step, str(path), _from_timestamp(path.stat().st_mtime))
            except FileNotFoundError:
                continue
    return None if markers_seen else legacy


def _from_timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
