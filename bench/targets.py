"""One way for every bench to state its targets: each figure printed next to its target
with "met" or "NOT MET", and the bench's exit status saying whether all were met, so
``make bench`` fails when one is missed, as it does when one crashes.

``BENCH_QUICK=1`` (``python -m bench --quick``, which ``make test`` runs) asks each bench for
small sizes, seconds instead of minutes: it shows the bench still runs end to end. Its
figures are printed but are no verdict (small N, a machine busy with the tests), so only a
crash fails a quick run.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn, TypeVar

T = TypeVar("T")
QUICK = os.environ.get("BENCH_QUICK") == "1"


def quick(full: T, small: T) -> T:
    """``small`` in quick mode, else ``full``."""
    return small if QUICK else full


class Targets:
    """The checks of one bench."""

    def __init__(self) -> None:
        self.missed: list[str] = []

    def at_most(self, what: str, value: float, limit: float, unit: str = "") -> bool:
        return self._check(what, value, limit, unit, value <= limit, "<=")

    def at_least(self, what: str, value: float, limit: float, unit: str = "") -> bool:
        return self._check(what, value, limit, unit, value >= limit, ">=")

    def _check(
        self, what: str, value: float, limit: float, unit: str, met: bool, sign: str
    ) -> bool:
        verdict = "met" if met else "NOT MET"
        if QUICK:
            verdict = f"{verdict} (quick run: no verdict)"
        print(f"  {what}: {value:.4g}{unit}  (target {sign} {limit:g}{unit})  {verdict}")
        if not met:
            self.missed.append(what)
        return met

    def exit(self) -> NoReturn:
        """Exit 1 when a target was missed in a full run, else 0."""
        if self.missed and not QUICK:
            print(f"targets not met: {', '.join(self.missed)}")
            sys.exit(1)
        sys.exit(0)
