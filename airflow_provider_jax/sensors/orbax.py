"""Sensor that waits for a finalized Orbax checkpoint step in GCS or a local directory."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_provider_jax.arguments import as_bool, is_template
from airflow_provider_jax.checkpoints import (
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    StepNameFormat,
    StorageUnavailableError,
    check_checkpoint_dir,
    find_newest_finalized,
    naming_hint,
)
from airflow_provider_jax.checkpoints.asset_events import publish_step, with_checkpoint_outlets
from airflow_provider_jax.triggers.orbax import OrbaxCheckpointTrigger

if TYPE_CHECKING:
    from airflow.sdk import Asset, Context


class OrbaxCheckpointSensor(BaseSensorOperator):
    """Wait until the newest *finalized* Orbax checkpoint step is ``>= min_step``; return it.

    A step counts only once its top-level ``commit_success.txt`` exists (Orbax writes it last,
    in both of its atomicity modes, since 0.12.3) and it still holds an item directory, so a
    half-written step (``CommitFileTemporaryPath`` writes into the step's final name), a step
    with only item-level markers, a temporary directory or a step whose deletion has removed
    its items is never reported. Prefix-based GCS sensors cannot tell these apart.

    Pushes ``{"step": N, "path": ".../N", "finalized_at": "<ISO-8601 UTC>"}`` as the return
    value XCom. A missing ``checkpoint_dir`` means "not yet"; a missing bucket or a 403 fails
    the task at once (it is skipped instead under ``soft_fail`` or ``never_fail``).

    :param checkpoint_dir: The ``CheckpointManager`` directory: ``gs://bucket/path`` or a local
        path (templated). In deferrable mode a local path must be readable by the triggerer.
    :param min_step: Wait for a finalized step at least this large (default: any step).
    :param step_prefix: ``CheckpointManagerOptions.step_prefix`` the run was saved with.
    :param step_format_fixed_length: ``CheckpointManagerOptions.step_format_fixed_length``.
    :param gcp_conn_id: Google Cloud connection used for GCS.
    :param allow_legacy_atomic_rename: Orbax's ``AtomicityOptions`` field of that name: also
        count local steps that an Orbax older than 0.12.3 renamed into place without
        ``commit_success.txt``. Off by default, as in Orbax: such a step can't be told from
        one ``CommitFileTemporaryPath`` is still writing. Never applied to ``gs://``.
    :param deferrable: Wait in the triggerer instead of a worker slot. Defaults to
        ``[operators] default_deferrable``.
    :param checkpoint_asset: an ``Asset`` that gets the step it found as events when the
        sensor succeeds: one without a partition key (``schedule=[asset]``) and one with the
        step as its partition key (``PartitionedAssetTimetable``); ``docs/assets.md``.
    """

    template_fields: Sequence[str] = ("checkpoint_dir",)
    ui_color = "#f9e0c7"

    def __init__(
        self,
        *,
        checkpoint_dir: str,
        min_step: int | None = None,
        step_prefix: str | None = None,
        step_format_fixed_length: int | None = None,
        gcp_conn_id: str = "google_cloud_default",
        allow_legacy_atomic_rename: bool = False,
        deferrable: bool | None = None,
        checkpoint_asset: Asset | None = None,
        **kwargs: Any,
    ) -> None:
        if checkpoint_asset is not None:
            kwargs["outlets"] = with_checkpoint_outlets(
                kwargs.get("task_id", ""), checkpoint_asset, kwargs.get("outlets")
            )
        super().__init__(**kwargs)
        self.checkpoint_asset = checkpoint_asset
        if min_step is not None and (
            isinstance(min_step, bool) or not isinstance(min_step, int) or min_step < 0
        ):
            raise ValueError(f"min_step must be a non-negative int or None, got {min_step!r}")
        StepNameFormat(step_prefix, step_format_fixed_length)  # validates early, at parse time
        if not is_template(checkpoint_dir):
            check_checkpoint_dir(checkpoint_dir)  # else once rendered, in _query()
        self.checkpoint_dir = checkpoint_dir
        self.min_step = min_step
        self.step_prefix = step_prefix
        self.step_format_fixed_length = step_format_fixed_length
        self.gcp_conn_id = gcp_conn_id
        self.allow_legacy_atomic_rename = as_bool(
            "allow_legacy_atomic_rename", allow_legacy_atomic_rename
        )
        if deferrable is None:
            deferrable = conf.getboolean("operators", "default_deferrable", fallback=False)
        self.deferrable = as_bool("deferrable", deferrable)

    def _query(self) -> CheckpointQuery:
        return CheckpointQuery(
            checkpoint_dir=check_checkpoint_dir(self.checkpoint_dir),
            min_step=self.min_step or 0,
            step_prefix=self.step_prefix,
            step_format_fixed_length=self.step_format_fixed_length,
            gcp_conn_id=self.gcp_conn_id,
            allow_legacy_atomic_rename=self.allow_legacy_atomic_rename,
        )

    def _check(self) -> FinalizedStep | None:
        try:
            found = find_newest_finalized(self._query())
        except CheckpointDirError as exc:
            # Waiting out the timeout cannot fix a missing bucket or a permission problem.
            raise AirflowFailException(str(exc)) from exc
        except StorageUnavailableError as exc:
            self.log.warning("Could not check %s, will try again: %s", self.checkpoint_dir, exc)
            return None
        if found is None:
            self.log.info(
                "No finalized step >= %d in %s yet%s",
                self.min_step or 0,
                self.checkpoint_dir,
                self._hint(),
            )
        else:
            self.log.info("Step %d is finalized at %s", found.step, found.path)
        return found

    def _hint(self) -> str:
        """Step folders named another way, when there are any: never worth failing a poke."""
        try:
            hint = naming_hint(self._query())
        except (CheckpointDirError, StorageUnavailableError):
            return ""
        return f" ({hint})" if hint else ""

    def poke(self, context: Context) -> PokeReturnValue:
        found = self._check()
        return PokeReturnValue(found is not None, found.to_xcom() if found else None)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return self._announce(context, super().execute(context))
        # Check once here: a checkpoint that is already there needs no trip to the triggerer.
        try:
            found = self._check()
        except AirflowFailException as exc:
            self._skip_or_raise(exc)
        if found is not None:
            return self._announce(context, found.to_xcom())
        query = self._query()
        self.defer(
            trigger=OrbaxCheckpointTrigger(
                checkpoint_dir=query.checkpoint_dir,
                min_step=query.min_step,
                step_prefix=query.step_prefix,
                step_format_fixed_length=query.step_format_fixed_length,
                gcp_conn_id=query.gcp_conn_id,
                poll_interval=self.poke_interval,
                allow_legacy_atomic_rename=query.allow_legacy_atomic_rename,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Return the trigger's step; errors raise, and ``resume_execution`` applies soft_fail."""
        if event.get("status") == "success":
            checkpoint: dict[str, Any] = event["checkpoint"]
            self.log.info("Step %s is finalized at %s", checkpoint["step"], checkpoint["path"])
            return self._announce(context, checkpoint)
        raise AirflowFailException(event.get("message", f"Unexpected trigger event: {event!r}"))

    def _announce(self, context: Context, checkpoint: dict[str, Any]) -> dict[str, Any]:
        """``checkpoint_asset``'s events for the step found, if the sensor has one."""
        if self.checkpoint_asset is not None:
            extra = {**checkpoint, "checkpoint_dir": self.checkpoint_dir}
            publish_step(context, self.checkpoint_asset, int(checkpoint["step"]), extra)
        return checkpoint

    def _skip_or_raise(self, exc: AirflowFailException) -> NoReturn:
        if self.soft_fail or self.never_fail:
            raise AirflowSkipException(f"Skipping: {exc}") from exc
        raise exc
