"""What a checkpoint search looks for, and the one check of where it looks. Which steps
count as finalized is decided in ``runtime.orbax_steps``, shared with the pods."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from airflow_provider_jax.runtime import orbax_steps
from airflow_provider_jax.runtime.orbax_steps import (
    COMMIT_SUCCESS_FILE,
    GCS_SCHEME,
    TMP_DIR_SUFFIX,
    CheckpointDirError,
    FinalizedStep,
    StepNameFormat,
)

__all__ = [
    "COMMIT_SUCCESS_FILE",
    "TMP_DIR_SUFFIX",
    "CheckpointDirError",
    "CheckpointQuery",
    "FinalizedStep",
    "GcsLocation",
    "StepNameFormat",
    "StorageUnavailableError",
    "check_checkpoint_dir",
]

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_ANY_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class StorageUnavailableError(Exception):
    """Storage kept failing with retryable errors; the next poke may succeed."""


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


class GcsLocation(orbax_steps.GcsLocation):
    """A checkpoint directory in GCS, from a URL :func:`check_checkpoint_dir` accepts."""

    @classmethod
    def parse(cls, url: str) -> GcsLocation:
        location = orbax_steps.GcsLocation.from_url(check_checkpoint_dir(url))
        return cls(location.bucket, location.prefix)


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
