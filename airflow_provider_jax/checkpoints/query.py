"""What a checkpoint search looks for, and the one check of where it looks. Which steps
count as finalized is decided in ``runtime.orbax_steps``, shared with the pods."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_jax.runtime import orbax_steps
from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import (
    COMMIT_SUCCESS_FILE,
    TMP_DIR_SUFFIX,
    CheckpointDirError,
    FinalizedStep,
    StepNameFormat,
)
from airflow_provider_jax.runtime.output_paths import check_storage_path

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
    # Orbax's AtomicityOptions.allow_legacy_atomic_rename: a local step an Orbax older than
    # 0.12.3 renamed into place without a marker counts (runtime.orbax_steps).
    allow_legacy_atomic_rename: bool = False

    @property
    def name_format(self) -> StepNameFormat:
        return StepNameFormat(self.step_prefix, self.step_format_fixed_length)

    @property
    def is_gcs(self) -> bool:
        return Location.is_gcs_uri(self.checkpoint_dir)


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
    try:
        return check_storage_path("checkpoint_dir", value)
    except ValueError as exc:
        raise CheckpointDirError(str(exc)) from None
