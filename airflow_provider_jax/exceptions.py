"""Errors a JAX job raises in Airflow, shared by the local and Kubernetes backends. Which host
failed and why is ``reporting/failures.py``; these only carry it to Airflow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_provider_jax.runtime.exits import CODE_ERROR, RESULT_ERROR

if TYPE_CHECKING:
    from airflow_provider_jax.reporting.failures import ProcessFailure


class JaxJobFailed(AirflowException):
    """A JAX job failed. The message is one block, cause first: the culprit's error (its
    ``[slice/host]`` and exception), what failed and how (the summary, its restarts), the
    culprit's traceback, every other failed process, and last the other hosts' last lines
    (``others``), which stopped after it and only look like causes (JAX's "another task
    died")."""

    goodput: dict[str, Any] | None = None  # the run's ledger, attached by the backend

    def __init__(
        self,
        summary: str,
        failures: Sequence[ProcessFailure] = (),
        others: Sequence[str] = (),
    ) -> None:
        self.summary = summary
        self.failures = tuple(failures)
        self.others = tuple(others)
        super().__init__("\n".join(self._parts()))

    def _parts(self) -> list[str]:
        if not self.failures:
            return [self.summary, *self.others]
        culprit, *rest = self.failures
        headline, *traceback = culprit.render().splitlines()
        return [headline, self.summary, *traceback, *(f.render() for f in rest), *self.others]

    @classmethod
    def of(
        cls, summary: str, failures: Sequence[ProcessFailure] = (), others: Sequence[str] = ()
    ) -> JaxJobFailed:
        """The error for these failures, culprit first: a :class:`JaxCodeError` when the
        culprit's own code raised."""
        culprit = failures[0].kind if failures else None
        kinds = {CODE_ERROR: JaxCodeError, RESULT_ERROR: JaxResultError}
        return kinds.get(culprit, cls)(summary, failures, others)  # type: ignore[arg-type]


class JaxCodeError(JaxJobFailed):
    """The user's code raised on a host: a bug, not a disruption, so the slice was not
    restarted. That host's traceback comes first after the summary."""


class JaxCodeErrorNoRetry(JaxCodeError, AirflowFailException):
    """A :class:`JaxCodeError` with ``retry_on_code_error=False``: Airflow does not retry."""


class JaxResultError(JaxCodeError, AirflowFailException):
    """The function returned a value that cannot come back as JSON (NaN, an object, too big
    without ``output_dir``): the training is done, so Airflow does not retry (a retry would
    train again for the same value). What could be kept is in ``output_dir``."""


class NoCapacity(JaxJobFailed):
    """A capacity choice got none within ``capacity_wait`` and its JobSet was deleted: the
    operator submits the next choice of the list."""


class SlicesChanged(AirflowException):
    """The backend stopped an elastic job (``min_slices``) to run it at another size: slices
    lost for longer than ``shrink_after``, or capacity for every slice back and a checkpoint
    taken since. The operator submits the JobSet again at ``slices``; only it catches this.

    :param slices: the size to go on with.
    :param reason: ``shrunk`` or ``grew`` (the runtime's ``start_reason()``).
    :param line: what happened, for the task log.
    :param clock: the try's goodput so far, carried on to the next JobSet's run: the local
        backend's clock, or a trigger's ledger (plain JSON).
    """

    def __init__(self, slices: int, reason: str, line: str, clock: Any = None) -> None:
        self.slices, self.reason, self.line, self.clock = slices, reason, line, clock
        super().__init__(line)


class JobSetConflict(AirflowException):
    """A JobSet of the task instance's name exists but was not made for it."""
