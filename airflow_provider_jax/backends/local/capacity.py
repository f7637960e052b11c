"""The local backend's stand-in for a cluster's TPU capacity, for drills of elastic slices.

On GKE a multislice job's slices are node pools; Spot or preemptible capacity takes a whole
slice's nodes away, and a restarted JobSet's pods for that slice stay Pending until nodes come
back. Locally, ``[jax] local_capacity_file`` says how many slices have capacity now
(``{"slices": 1}``): slice indexes from that count on lose their processes and do not start
until the file gives them back. Without the file every slice has capacity.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

UNLIMITED = math.inf


class LocalCapacity:
    """How many slices have capacity now, read from ``path`` when it changes.

    :param path: the capacity file, or None for unlimited capacity.
    :param log: where a file that cannot be read is reported (once per content).
    """

    def __init__(self, path: str | None, log: Any) -> None:
        self.path, self.log = path, log
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the content read
        self._slices: float = UNLIMITED

    def slices(self) -> float:
        """Slices with capacity now (``inf``: no limit)."""
        if self.path is None:
            return UNLIMITED
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._slices = None, UNLIMITED
            return UNLIMITED
        seen = (stat.st_mtime_ns, stat.st_size)
        if seen != self._seen:
            self._seen = seen
            self._slices = self._read()
        return self._slices

    def _read(self) -> float:
        try:
            with open(self.path, encoding="utf-8") as f:  # type: ignore[arg-type]
                value = json.load(f)["slices"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"'slices' must be an integer >= 0, got {value!r}")
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as err:
            self.log.warning(
                "[jax] local_capacity_file %s: %s; keeping the capacity as it was (%s slices).",
                self.path,
                err,
                self._slices,
            )
            return self._slices
        return value
