"""Which failures of a JAX job are worth another try: Airflow's own retry policy
(``retry_policy=``, evaluated in the worker with the exception in hand), filled in from what
the provider knows about the failure. Its reason is stored on the task instance with the retry.

- a result JSON cannot carry fails (the training is done; another try trains again);
- a code error whose culprit raised a programming error (``NameError``, ``TypeError``, ...)
  fails: it fails the same way on every try;
- a code error that is I/O or transient (``OSError``, ``ConnectionError``, ...) retries;
- a disruption that used up the job's restarts, or no capacity, retries after a delay that
  fits the cause;
- anything else falls to the task's own settings, or to the policy it is composed with.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk.definitions.retry_policy import RetryDecision, RetryPolicy

from airflow_provider_jax.arguments import one_of, positive_seconds
from airflow_provider_jax.exceptions import JaxCodeError, JaxJobFailed, JaxResultError, NoCapacity

if TYPE_CHECKING:
    from airflow.sdk import Context

# Raised by a bug: the same code with the same inputs raises it again.
PROGRAMMING_ERRORS = frozenset({
    "NameError", "UnboundLocalError", "TypeError", "AttributeError", "ZeroDivisionError",
    "ImportError", "ModuleNotFoundError", "SyntaxError", "IndentationError", "AssertionError",
    "NotImplementedError", "RecursionError", "KeyError", "IndexError",
})  # fmt: skip
# Raised by the world: storage, the network, a peer, a clock.
TRANSIENT_ERRORS = frozenset({"OSError", "ConnectionError", "TimeoutError", "BrokenPipeError"})
CODE_ERRORS = ("classify", "retry", "fail")  # what other code errors do: see JaxRetryPolicy
DISRUPTION_DELAY = datetime.timedelta(minutes=1)  # the slice's restarts are spent already
CAPACITY_DELAY = datetime.timedelta(minutes=10)  # capacity comes back in minutes, not seconds


class JaxRetryPolicy(RetryPolicy):
    """The provider's retry policy, the default of its operators and decorators.

    :param code_errors: ``classify`` (default): programming errors fail, I/O errors retry, the
        rest falls through; ``fail``: every code error fails; ``retry``: every one retries
        (``retry_on_code_error``, which this replaces, was ``retry`` and ``fail``).
    :param fallback: a policy of the user's, asked about everything this one leaves to the
        task's settings.
    :param disruption_delay: the delay before a try after a disruption.
    :param capacity_delay: the delay before a try after no capacity.
    """

    def __init__(
        self,
        code_errors: str = "classify",
        fallback: RetryPolicy | None = None,
        disruption_delay: datetime.timedelta = DISRUPTION_DELAY,
        capacity_delay: datetime.timedelta = CAPACITY_DELAY,
    ) -> None:
        one_of("code_errors", code_errors, CODE_ERRORS)
        if fallback is not None and not isinstance(fallback, RetryPolicy):
            raise TypeError(f"fallback must be a RetryPolicy, got {fallback!r}.")
        self.code_errors = code_errors
        self.fallback = fallback
        self.disruption_delay = _delay("disruption_delay", disruption_delay)
        self.capacity_delay = _delay("capacity_delay", capacity_delay)

    def evaluate(
        self,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Context | None = None,
    ) -> RetryDecision:
        decision = self._decide(exception)
        if decision is None and self.fallback is not None:
            return self.fallback.evaluate(exception, try_number, max_tries, context)
        return decision or RetryDecision.default()

    def _decide(self, exception: BaseException) -> RetryDecision | None:
        if isinstance(exception, JaxResultError):
            return RetryDecision.fail(f"{_culprit(exception)}: the result cannot come back")
        if isinstance(exception, JaxCodeError):
            return self._code_error(exception)
        if isinstance(exception, NoCapacity):
            why = f"no capacity: {exception.summary}"
            return RetryDecision.retry(self.capacity_delay, why)
        if isinstance(exception, JaxJobFailed):
            return RetryDecision.retry(self.disruption_delay, f"disrupted: {exception.summary}")
        return None

    def _code_error(self, error: JaxCodeError) -> RetryDecision | None:
        culprit = _culprit(error)
        if self.code_errors == "fail":
            return RetryDecision.fail(f"{culprit} (retry_on_code_error=False)")
        if self.code_errors == "retry":
            return RetryDecision.retry(reason=culprit)
        types = error_types(error)
        if PROGRAMMING_ERRORS.intersection(types):
            return RetryDecision.fail(f"{culprit}: a programming error fails every try alike")
        if TRANSIENT_ERRORS.intersection(types):
            return RetryDecision.retry(reason=f"{culprit}: I/O, which another try may not meet")
        return None

    def serialize(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "__type": "JaxRetryPolicy",
            "code_errors": self.code_errors,
            "disruption_delay": self.disruption_delay.total_seconds(),
            "capacity_delay": self.capacity_delay.total_seconds(),
        }
        if self.fallback is not None:
            data["fallback"] = self.fallback.serialize()
        return data


def _delay(name: str, value: object) -> datetime.timedelta:
    return datetime.timedelta(seconds=positive_seconds(name, value, timedelta_ok=True))


def error_types(error: JaxJobFailed) -> Sequence[str]:
    """The culprit's exception class and its bases, as its runtime named them (only the class
    itself where it did not)."""
    if not error.failures:
        return ()
    culprit = error.failures[0]
    return culprit.error_types or (culprit.error.partition(":")[0].strip(),)


def _culprit(error: JaxJobFailed) -> str:
    if not error.failures:
        return error.summary
    culprit = error.failures[0]
    return f"{culprit.tag} {culprit.error}"[:300]
