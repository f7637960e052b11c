"""The one backoff for transient failures, for every caller (API calls through the hooks, the
shared watch's relists, GCS listings): a tenacity wait, with jitter, honouring ``Retry-After``.

The Kubernetes API (429 with Retry-After, 5xx, lost connections) and GCS (429, 5xx) ask clients
to back off exponentially with jitter, so that a thousand triggers do not retry in lockstep.
"""

from __future__ import annotations

import contextlib
import random

from tenacity import RetryCallState
from tenacity.wait import wait_base


class ExponentialJitter(wait_base):
    """Wait ``U(c/2, c)`` with ``c = min(cap, first * 2**(attempt - 1))``, or longer when the
    failure carries a ``Retry-After`` header (seconds)."""

    def __init__(self, first: float = 1.0, cap: float = 30.0) -> None:
        self.first, self.cap = first, cap

    def delay(self, attempt: int, err: BaseException | None = None) -> float:
        """The wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.cap, self.first * 2 ** (attempt - 1))
        delay = random.uniform(ceiling / 2, ceiling)
        headers = getattr(err, "headers", None) or {}
        if retry_after := headers.get("Retry-After"):
            with contextlib.suppress(TypeError, ValueError):
                delay = max(delay, float(retry_after))
        return delay

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        err = outcome.exception() if outcome is not None and outcome.failed else None
        return self.delay(retry_state.attempt_number, err)
