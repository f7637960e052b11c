"""How a JAX task runs: start the JobSet on its backend, wait in the worker or defer, publish
the outcome; and walk a capacity list, one JobSet at a time, when a choice gets no capacity.

A capacity choice that gets none within ``capacity_wait`` ends its wait with
:class:`~airflow_provider_jax.exceptions.NoCapacity`, its JobSet already deleted; the next
choice is submitted under the same name (``submit`` waits for the old one to be gone), so a
try never has two JobSets. A reattaching try goes on from the choice its JobSet's annotation
names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from airflow_provider_jax.contract.backend import get_backend
from airflow_provider_jax.exceptions import NoCapacity
from airflow_provider_jax.operators.data_staging import upload
from airflow_provider_jax.operators.job_settings import job_settings

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_jax.contract import Backend, BackendTraits, Outcome, Started
    from airflow_provider_jax.manifest.capacity_choices import CapacityChoices

TRIGGER_FAIL_REPR = "__fail__"  # Airflow's next_method for a deferred task it fails itself


class JobExecution:
    """Mixed into the JAX operator: ``execute``, its deferred resumption, and ``on_kill``."""

    task_id: str
    log: Any
    deferrable: bool
    capacity: CapacityChoices
    capacity_choice: int
    resolved_backend: str
    backend_traits: BackendTraits
    data_inputs: Any
    gcp_conn_id: str
    impersonation_chain: Any
    stored_links: dict[str, str] | None
    if TYPE_CHECKING:  # from the operator's other mixins and BaseOperator

        def build_manifest(self, context: Context) -> dict[str, Any]: ...
        def defer(self, **kwargs: Any) -> None: ...
        def _announce(self, context: Context, started: Started) -> None: ...
        def _publish(self, context: Context, outcome: Outcome) -> Any: ...
        def _failures(self, context: Context) -> Any: ...

    def _backend(self, context: Context) -> Backend:
        return get_backend(self.resolved_backend, job_settings(self, context))  # type: ignore[arg-type]

    def execute(self, context: Context) -> Any:
        self.stored_links = {}  # none yet: see StoredLink.get_link
        if self.backend_traits.remote:  # a local Data folder is staged before any pod
            upload(self.data_inputs(True), self.gcp_conn_id, self.impersonation_chain, self.log)
        return self._run_choice(context, 0)

    def _run_choice(self, context: Context, choice: int) -> Any:
        """Submit capacity choice ``choice`` (or reattach), then wait or defer."""
        self.capacity_choice = choice
        try:
            manifest = self.build_manifest(context)
        except (ValueError, TypeError) as err:
            # Rendered values that are wrong stay wrong: fail without burning retries.
            raise AirflowFailException(f"{self.task_id}: {err}") from err
        # Kept until the wait returns: Airflow calls on_kill *after* a timeout or a kill has
        # raised out of execute(), and on_kill must still reach the job.
        backend = self._running = self._backend(context)
        started = backend.start(manifest)
        try:
            choice = self.capacity_choice = started.capacity_choice  # a reattach: further on
            self._announce(context, started)
            if self.deferrable and started.deferral is not None:
                deferral = started.deferral
                self.defer(
                    trigger=deferral.trigger,
                    method_name="execute_complete",
                    kwargs={**deferral.kwargs, **({"capacity_choice": choice} if choice else {})},
                    timeout=deferral.timeout,
                )
        except TaskDeferred:
            raise
        except BaseException as err:
            # Nothing will wait on the job: it must not run on, unwatched and paid for.
            self._abandon(backend, started, err)
            raise
        try:
            with self._failures(context):
                outcome = backend.wait(started)
        except NoCapacity as err:
            return self._next_choice(context, choice, err)
        self._running = None
        return self._publish(context, outcome)

    def _abandon(self, backend: Backend, started: Started, err: BaseException) -> None:
        """Delete the job this try started, when the try fails before it waits on it."""
        where = f"JobSet {started.namespace}/{started.name}"
        self.log.error(
            "%s was started, but this try failed before waiting on it (%s: %s): deleting it.",
            where,
            type(err).__name__,
            err,
        )
        try:
            backend.kill()
        except Exception:
            self.log.exception("Could not delete %s; delete it by hand.", where)
        else:
            self.log.error("Deleted %s.", where)
        self._running = None

    def execute_complete(
        self,
        context: Context,
        event: dict[str, Any],
        cluster: dict[str, Any] | None = None,
        capacity_choice: int = 0,
    ) -> Any:
        """Resume after the JobSet trigger fired: the leader's result, the failure, or the
        next capacity choice."""
        self.capacity_choice = capacity_choice
        try:
            with self._failures(context):
                outcome = self._backend(context).complete(event, cluster)
        except NoCapacity as err:
            return self._next_choice(context, capacity_choice, err)
        return self._publish(context, outcome)

    def _next_choice(self, context: Context, choice: int, err: NoCapacity) -> Any:
        choices = self.capacity.choices
        if choice + 1 >= len(choices):  # the last choice waits as a plain capacity: not here
            raise err
        self.log.warning(
            "Capacity %s (choice %d of %d): %s. Its JobSet is deleted; trying %s next.",
            choices[choice],
            choice + 1,
            len(choices),
            err.summary.rstrip("."),
            choices[choice + 1],
        )
        return self._run_choice(context, choice + 1)

    def resume_execution(
        self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context
    ) -> Any:
        if next_method == TRIGGER_FAIL_REPR:
            # Airflow failed the deferred task itself (its trigger timeout, or the trigger
            # crashed): the JobSet must not outlive it.
            self._backend(context).kill()
        return super().resume_execution(next_method, next_kwargs, context)  # type: ignore[misc]

    def on_kill(self) -> None:
        # Set while execute() runs (waiting in the worker); a deferred task has no worker.
        if (backend := getattr(self, "_running", None)) is not None:
            backend.kill()
