"""One object per key per event loop, shared by every trigger there: the informers, the
queue-position pollers. Kept per loop because their tasks and clients belong to one loop (a
triggerer has one; blocking waits and tests run loops of their own)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PerLoop(Generic[K, V]):
    """The shared object for a key in the running loop, made anew when there is none or the
    one there can no longer serve; forgotten by its last user."""

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[K, V]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, key: K, make: Callable[[], V], usable: Callable[[V], bool]) -> V:
        shared = self._loops.setdefault(asyncio.get_running_loop(), {})
        value = shared.get(key)
        if value is None or not usable(value):
            value = shared[key] = make()
        return value

    def forget(self, key: K, value: V) -> None:
        """Drop ``value`` (its last user left), unless a newer one has replaced it."""
        shared = self._loops.get(asyncio.get_running_loop(), {})
        if shared.get(key) is value:
            del shared[key]
