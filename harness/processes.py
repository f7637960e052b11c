"""Is a process still alive? For the reaper and the tests that check nothing is left behind."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (dead, not yet reaped by its parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def wait_gone(pids: Iterable[int], timeout: float = 5.0) -> list[int]:
    """The pids still alive after ``timeout`` seconds (empty when all are gone)."""
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
