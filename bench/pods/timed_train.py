"""The quickstart's training, with the wall clock read at its first and last line.

``bench.local_overhead`` runs it on both sides (backend and by hand) to split each run's wall
time into start-up (before the user's first line), the user's code, and the end (after its
last line). Epoch time, so the parent can compare it with its own clock on the same machine.
"""

from __future__ import annotations

import time
from typing import Any


def train(steps: int) -> dict[str, Any]:
    """``quickstart_train.train``'s result, plus ``first_line`` and ``last_line`` (epoch s)."""
    first_line = time.time()
    import quickstart_train

    result = quickstart_train.train(steps=steps)
    return {**result, "first_line": first_line, "last_line": time.time()}
