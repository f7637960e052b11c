"""Which hosts' logs reach the task log (``stream_logs``), and the per-host summary a failed
job leaves there. Both backends use it, so a host reads the same locally and on GKE.

The summary is one block, each line ``[slice/host] text`` under a fixed header: find a
host's last words in the UI's log view, or in the REST API's task log
(``GET /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/{task}/logs/{try}``), with
``grep '\\[0/3\\]'``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

STREAM_LEADER, STREAM_ALL, STREAM_NONE = "leader", "all", "none"
STREAM_LOGS = (STREAM_LEADER, STREAM_ALL, STREAM_NONE)
SUMMARY_HEADER = "Each host's last lines:"
SUMMARY_LINES = 5  # per host
SUMMARY_HOSTS = 16  # hosts shown; a 64-host slice's summary is still one screen


def summary(
    tails: Iterable[tuple[str, Sequence[str]]], *, hidden: int = 0, more_at: str = ""
) -> list[str]:
    """The block for ``(tag, last lines)`` of each host, in the order given; ``hidden`` hosts
    beyond :data:`SUMMARY_HOSTS` are counted, with where to read them. No hosts: no block.
    Callers leave out the hosts whose lines the failure itself shows, so nothing is told
    twice."""
    tails = list(tails)
    if not tails and not hidden:
        return []
    lines = [SUMMARY_HEADER]
    for tag, tail in tails:
        last = [line for line in tail if line.strip()][-SUMMARY_LINES:]
        if not last:
            last = ["(no output)"]
        lines.extend(f"{tag} {line}" for line in last)
    if hidden:
        lines.append(f"... and {hidden} more host(s) not shown{more_at}")
    return lines
