"""What a checkpoint search looks for, and the one check of where it looks.

Step names follow orbax-checkpoint 0.12.x, so the search sees exactly the steps a
``CheckpointManager`` with the same options would restore.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

COMMIT_SUCCESS_FILE = "commit_success.txt"
TMP_DIR_SUFFIX = ".orbax-checkpoint-tmp"
GCS_SCHEME = "gs://"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_ANY_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class CheckpointDirError(ValueError):
    """Waiting cannot help (bad path, missing bucket, no permission, not a directory): fail now."""


class StorageUnavailableError(Exception):
    """Storage kept failing with retryable errors; the next poke may succeed."""


@dataclass(frozen=True)
class StepNameFormat:
    """Orbax's standard step names: ``[<step_prefix>_]<step>``, optionally zero-padded.
    Temporary directories never match."""

    step_prefix: str | None = None
    step_format_fixed_length: int | None = None

    def __post_init__(self) -> None:
        length = self.step_format_fixed_length
        if length is not None and (not isinstance(length, int) or length <= 0):
            raise ValueError(f"step_format_fixed_length must be a positive int, got {length!r}")

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        # Like orbax: zero-padded to exactly `length` digits, or longer without padding.
        n = self.step_format_fixed_length
        digits = rf"0\d{{{n - 1}}}|[1-9]\d{{{n - 1}}}\d*" if n else r"0|[1-9]\d*"
        prefix = re.escape(f"{self.step_prefix}_") if self.step_prefix else ""
        return re.compile(rf"{prefix}({digits})")

    def parse(self, name: str) -> int | None:
        """Return the step a directory name stands for, or None if it is not a step."""
        match = self._pattern.fullmatch(name)
        return int(match.group(1)) if match else None

    def build(self, step: int) -> str:
        length = self.step_format_fixed_length
        digits = f"{step:0{length}d}" if length else f"{step}"
        return f"{self.step_prefix}_{digits}" if self.step_prefix else digits


@dataclass(frozen=True)
class FinalizedStep:
    """A step whose top-level commit marker was present when it was checked."""

    step: int
    path: str
    finalized_at: datetime

    def to_xcom(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "path": self.path,
            "finalized_at": self.finalized_at.astimezone(UTC).isoformat(),
        }


@dataclass(frozen=True)
class CheckpointQuery:
    """What to look for. Plain data, so a trigger can serialize it as is."""

    checkpoint_dir: str
    min_step: int = 0
    step_prefix: str | None = None
    step_format_fixed_length: int | None = None
    gcp_conn_id: str = "google_cloud_default"

    @property
    def name_format(self) -> StepNameFormat:
        return StepNameFormat(self.step_prefix, self.step_format_fixed_length)

    @property
    def is_gcs(self) -> bool:
        return self.checkpoint_dir.startswith(GCS_SCHEME)


@dataclass(frozen=True)
class GcsLocation:
    """A checkpoint directory in GCS; build it from a value :func:`check_checkpoint_dir` passed."""

    bucket: str
    prefix: str  # "" for the bucket root, else ends with "/"

    @classmethod
    def parse(cls, url: str) -> GcsLocation:
        parts = urlsplit(check_checkpoint_dir(url))
        path = parts.path.strip("/")
        return cls(parts.netloc, f"{path}/" if path else "")

    def url(self, relative: str = "") -> str:
        return f"{GCS_SCHEME}{self.bucket}/{self.prefix}{relative}"


def check_checkpoint_dir(value: object) -> str:
    """``value`` if it is ``gs://<bucket>/<path>`` or an absolute local path; else a
    :class:`CheckpointDirError` that says why. A wrong path would otherwise read as "no
    checkpoint yet" until the sensor times out."""
    expected = "gs://<bucket>/<path> or an absolute local path"
    if not isinstance(value, str) or not value.strip():
        raise CheckpointDirError(f"checkpoint_dir must be {expected}, got {value!r}.")
    if value.startswith(GCS_SCHEME):
        bucket = urlsplit(value).netloc
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise CheckpointDirError(
                f"checkpoint_dir {value!r}: {bucket!r} is not a valid GCS bucket name "
                "(3-222 lowercase letters, digits, '-', '_' and '.')."
            )
        return value
    if _ANY_SCHEME.match(value):
        raise CheckpointDirError(
            f"checkpoint_dir {value!r}: only GCS is supported; use {expected}."
        )
    if not os.path.isabs(value):
        raise CheckpointDirError(
            f"checkpoint_dir {value!r} is relative, so it would depend on the worker's "
            f"working directory; use {expected}."
        )
    return value
