"""Waiting for a state, never for a time: the one helper tests without a harness object of
their own (an emulator, a stack, a browser) poll with."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def eventually(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    """``check()``'s first truthy value, polled until ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout}s: {what}")
