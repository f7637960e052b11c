"""How much of the pods' output reaches the task log, the same on every backend: at most
``max_lines`` lines per host per Airflow try (across the JobSet's restarts), each cut at
:data:`MAX_LINE` characters, and one line that says where the rest is. A chatty job must not
fill the Airflow log store (200,000 lines are 44 MB there); the pod's log keeps everything.
Pure: no I/O."""

from __future__ import annotations

MAX_LINE = 1000  # characters of one log line shown in the task log
POD_LOG_HAS_THE_REST = "(log output stops here in the task log; the pod's log has the rest)"


class LineBudget:
    """Counts the lines shown per host tag (``[slice/host]``)."""

    def __init__(self, max_lines: int, notice: str = POD_LOG_HAS_THE_REST) -> None:
        self.max_lines = max_lines
        self.notice = notice
        self._left: dict[str, int] = {}

    def take(self, tag: str, text: str) -> str | None:
        """What to show of ``text``: the line (cut), the notice once the budget is spent,
        then nothing."""
        left = self._left[tag] = self._left.get(tag, self.max_lines) - 1
        if left > 0:
            return text[:MAX_LINE]
        return self.notice if left == 0 else None

    def spent(self, tag: str) -> bool:
        return self._left.get(tag, self.max_lines) <= 0
