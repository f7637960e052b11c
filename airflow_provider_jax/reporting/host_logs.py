"""Which hosts' logs reach the task log (``stream_logs``), and the per-host summary a failed
job leaves there. Both backends use it, so a host reads the same locally and on GKE.

The summary is one block, each line ``[slice/host] text`` under a fixed header: find a
host's last words in the UI's log view, or in the REST API's task log
(``GET /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/{task}/logs/{try}``), with
``grep '\\[0/3\\]'``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

STREAM_LEADER, STREAM_ALL, STREAM_NONE = "leader", "all", "none"
STREAM_LOGS = (STREAM_LEADER, STREAM_ALL, STREAM_NONE)
SUMMARY_HEADER = "Each host's last lines:"
SUMMARY_LINES = 5  # per host
SUMMARY_HOSTS = 16  # hosts shown; a 64-host slice's summary is still one screen
# Gloo (JAX's CPU collectives) reports each connection at start-up, and again after every
# restart: "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer
# ranks is : 1", or without its "[Gloo] Rank " in newer builds. It says nothing is wrong.
# Written from C++ beside Python's own output, it may arrive glued to another line, or cut in
# two, so every piece of it is taken out of a line wherever it stands.
_GLOO_CONNECTED = re.compile(
    r"(?:\[Gloo\]\s*)?(?:Rank\s+)?\d+ is connected to \d+ peer ranks\.?"
    r"(?:\s*Expected number of connected peer ranks is\s*:\s*\d+)?"
    r"|Expected number of connected peer ranks is\s*:\s*\d+"
    r"|\[Gloo\]\s*Rank\s+\d+\s*$"
)


def without_gloo_noise(line: str) -> str | None:
    """``line`` without Gloo's connection reports; None when nothing else was on it."""
    if "connected" not in line and "[Gloo]" not in line:
        return line  # the common case, without a regex
    kept = _GLOO_CONNECTED.sub("", line)
    if kept == line:
        return line
    return kept.strip() or None


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
