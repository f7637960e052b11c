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

from airflow_provider_jax.runtime.messages import FAILURE_BEGIN, FAILURE_END

STREAM_LEADER, STREAM_ALL, STREAM_NONE = "leader", "all", "none"
STREAM_LOGS = (STREAM_LEADER, STREAM_ALL, STREAM_NONE)
SUMMARY_HEADER = "The other hosts' last lines (they stopped after the failure above):"
SUMMARY_LINES = 5  # per host
SUMMARY_HOSTS = 16  # hosts shown; a 64-host slice's summary is still one screen
# Gloo (JAX's CPU collectives) reports each connection at start-up, and again after every
# restart: "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer
# ranks is : 1", or without its "[Gloo] Rank " in newer builds. It says nothing is wrong.
# Written from C++ piece by piece beside Python's own output, it reaches a reader whole, glued
# to another line, or in fragments ("[Gloo] Rank", "is connected to 7 peer ranks.", "",
# "Expected number of connected peer ranks is :"): every piece of it is taken out.
_GLOO_CONNECTED = re.compile(
    r"(?:\[Gloo\]\s*)?(?:Rank\s+)?\d+ is connected to \d+ peer ranks\.?"
    r"(?:\s*Expected number of connected peer ranks is\s*:\s*\d+)?"
    r"|Expected number of connected peer ranks is\s*:\s*\d+"
)
_NUMBER = "<n>"
_GLOO_WORDS = (  # noqa: SIM905 - the sentence as Gloo prints it, read as words
    "[Gloo] Rank <n> is connected to <n> peer ranks. "
    "Expected number of connected peer ranks is : <n>"
).split()
_DISTINCT = frozenset({"[Gloo]", "connected", "peer", "Expected"})  # never a user's fragment
_WORD = re.compile(r"\[Gloo\]|\d+|[^\s\[\d]+")  # "15[Gloo]" is two words, as Gloo wrote them


class GlooFilter:
    """Takes Gloo's connection reports out of one process's lines, as they come: a fragment
    continues the report the previous one began (so a bare rank number or an empty line
    between two pieces goes too)."""

    def __init__(self) -> None:
        self._at: int | None = None  # where in the report the last fragment ended
        self._inside = False  # the last line was a piece of a report

    def keep(self, line: str) -> str | None:
        """``line`` as the task log should show it; None when it was only Gloo's."""
        words = _WORD.findall(line)
        inside, self._inside = self._inside, False
        if not words or (inside and all(w.isdigit() for w in words)):
            self._inside = inside  # an empty line, or a bare number, between two pieces
            return None if inside else line
        if self._piece(words, self._at) or _only_gloo(words):
            self._inside = True  # Gloo's threads interleave their words: "to [Gloo] Rank 03"
            return None
        self._at = None
        if "connected" not in line:
            return line
        kept = _GLOO_CONNECTED.sub(" ", line)
        if kept == line:
            return line
        # Whole reports taken out, what is left may begin the next ("... : 15 [Gloo] Rank").
        rest = _WORD.findall(kept)
        if not rest or self._piece(rest, None) or _only_gloo(rest):
            self._inside = bool(rest)
            return None
        return kept.strip()

    def _piece(self, words: list[str], at: int | None) -> bool:
        """Whether ``words`` are a piece of a report (continuing ``at``); if so, remember
        where it ended."""
        start = _place(words, at)
        if start is None:
            return False
        end = start + len(words)
        self._at = end if end < len(_GLOO_WORDS) else None
        return True


_VOCABULARY = frozenset(w.rstrip(".") for w in _GLOO_WORDS if w != _NUMBER)


def _only_gloo(words: list[str]) -> bool:
    """Whether every word is one of a report's (numbers included), one of them its own."""
    stripped = [w.rstrip(".") for w in words]
    return bool(_DISTINCT.intersection(stripped)) and all(
        w in _VOCABULARY or w.isdigit() for w in stripped
    )


def _place(words: list[str], at: int | None) -> int | None:
    """Where ``words`` stand in Gloo's report: right after ``at`` (a continuation), or
    anywhere when they hold one of its own words; None when they are no piece of it."""
    starts = [at] if at is not None else []
    if _DISTINCT.intersection(w.rstrip(".:") for w in words) or any(w in _DISTINCT for w in words):
        starts += range(len(_GLOO_WORDS) - len(words) + 1)
    for start in starts:
        if start is not None and _fits(words, start):
            return start
    return None


def _fits(words: list[str], start: int) -> bool:
    template = _GLOO_WORDS[start : start + len(words)]
    if len(template) < len(words):
        return False
    return all(
        w.isdigit() if t == _NUMBER else w.rstrip(".") == t.rstrip(".")
        for w, t in zip(words, template, strict=True)
    )


class HostLines:
    """What of one process's lines the task log shows, as they come: its failure's traceback
    (between the runtime's markers) is left out, since the error shows it once, in its block;
    then Gloo's connection reports (:class:`GlooFilter`)."""

    def __init__(self) -> None:
        self._gloo = GlooFilter()
        self._in_failure = False

    def keep(self, line: str) -> str | None:
        """``line`` as the task log should show it; None when it is not shown."""
        if self._in_failure or line == FAILURE_BEGIN:
            self._in_failure = line != FAILURE_END
            return None
        return self._gloo.keep(line)


def without_gloo_noise(line: str) -> str | None:
    """``line`` without Gloo's connection reports, read on its own; None when nothing else
    was on it."""
    return GlooFilter().keep(line)


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
