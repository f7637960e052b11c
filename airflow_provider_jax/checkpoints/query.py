"""What a checkpoint search looks for, and the one check of where it looks. Which steps
count as finalized is decided in ``runtime.orbax_steps``, shared with the pods; the search
itself is the driver's of the folder's store (``airflow_provider_jax/stores/``)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import (
    COMMIT_SUCCESS_FILE,
    TMP_DIR_SUFFIX,
    CheckpointDirError,
    FinalizedStep,
    StepNameFormat,
    StepRules,
)
from airflow_provider_jax.runtime.output_paths import check_storage_path
from airflow_provider_jax.runtime.stores import parse_location
from airflow_provider_jax.stores import Access, StorageUnavailableError

__all__ = [
    "COMMIT_SUCCESS_FILE",
    "TMP_DIR_SUFFIX",
    "CheckpointDirError",
    "CheckpointQuery",
    "FinalizedStep",
    "StepNameFormat",
    "StorageUnavailableError",
    "check_checkpoint_dir",
]


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
    def rules(self) -> StepRules:
        return StepRules(self.name_format, self.min_step, self.allow_legacy_atomic_rename)

    @property
    def location(self) -> Location:
        """``checkpoint_dir``, parsed; a :class:`CheckpointDirError` that says why not."""
        return parse_location(check_checkpoint_dir(self.checkpoint_dir), "checkpoint_dir")

    @property
    def access(self) -> Access:
        return Access(self.gcp_conn_id)


def check_checkpoint_dir(value: object) -> str:
    """``value`` if it is a location of a store (``gs://<bucket>/<path>``, an absolute local
    path); else a :class:`CheckpointDirError` that says why. A wrong path would otherwise read
    as "no checkpoint yet" until the sensor times out."""
    try:
        return check_storage_path("checkpoint_dir", value)
    except ValueError as exc:
        raise CheckpointDirError(str(exc)) from None
