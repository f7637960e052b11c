"""Retries within a time budget, for the triggers' API calls and the shared watch: a trigger
rides out an API server's restart or a burst of 429s, and gives up with one clear error once
they have lasted ``retry_budget`` seconds (the trigger's option), instead of waiting forever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryError, retry_if_exception, stop_after_delay

from airflow_provider_jax.hooks.api_errors import explain, is_transient
from airflow_provider_jax.hooks.retry import ExponentialJitter

log = logging.getLogger(__name__)
T = TypeVar("T")


class ApiUnavailable(Exception):
    """The Kubernetes API kept failing past the retry budget, or refused us outright."""


class Backoff:
    """Backoff within a time budget counted from the first failure since the last
    :meth:`reset`. A hand-held loop rather than a tenacity ``Retrying``, because a watch that
    delivers events between failures is progress, and must start the budget over."""

    def __init__(self, budget: float, first: float = 1.0, cap: float = 30.0) -> None:
        self.budget, self.wait_for = budget, ExponentialJitter(first, cap)
        self.reset()

    def reset(self) -> None:
        self.failures = 0
        self.since: float | None = None

    async def wait(self, err: BaseException) -> None:
        """Sleep before the next try, or raise :class:`ApiUnavailable` once over budget."""
        now = time.monotonic()
        self.since = self.since or now
        if now - self.since >= self.budget:
            raise _gave_up(now - self.since, err) from err
        self.failures += 1
        delay = self.wait_for.delay(self.failures, err)
        await asyncio.sleep(min(delay, self.budget - (now - self.since)))


def _gave_up(seconds: float, err: BaseException) -> ApiUnavailable:
    return ApiUnavailable(f"the Kubernetes API has been failing for {seconds:.0f}s: {explain(err)}")


def _failure(outcome: Any) -> str:
    """What a failed attempt raised, explained."""
    err = outcome.exception() if outcome is not None else None
    return explain(err) if err is not None else "(no exception)"


async def with_retries(call: Callable[[], Awaitable[T]], budget: float) -> T:
    """``call()``, retried on transient API errors until they have lasted ``budget`` seconds."""
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_delay(budget),
        wait=ExponentialJitter(),
        before_sleep=lambda state: log.warning(
            "Kubernetes API call failed, retrying: %s", _failure(state.outcome)
        ),
    )

    async def attempt() -> T:  # tenacity awaits only coroutine functions, not lambdas
        return await call()

    try:
        return await retrying(attempt)
    except RetryError as gave_up:
        err = gave_up.last_attempt.exception()
        assert err is not None  # only a failed attempt is retried
        raise _gave_up(budget, err) from err
