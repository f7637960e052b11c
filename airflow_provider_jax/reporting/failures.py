"""Why a JAX job failed, host by host: each process's failure as its runtime reported it (or
as its exit code and log tell), ranked so that the root cause comes first, and the one line
each slice restart logs. The same on both backends. Pure: no Airflow, no I/O.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass

from airflow_provider_jax.runtime.exits import (
    CODE_ERROR,
    DISRUPTION,
    EXIT_SIGTERM,
    LOST_PEER,
    NOT_STARTED_EXIT_CODES,
    RESTARTABLE_EXIT_CODES,
    as_reported,
    exit_class,
    log_shows_lost_peer,
)
from airflow_provider_jax.runtime.messages import MAX_DUMP_URI, parse_message

TRACEBACK_LINES = 40


@dataclass(frozen=True)
class ProcessFailure:
    """Why one JAX process (one pod) failed: its ``[slice/host]`` tag, the error, and the
    tail of its traceback (or of its log, when it died without a word). ``log_tail``, when
    set, adds its last log lines after a traceback (pods' logs are not in the task log)."""

    tag: str
    error: str
    traceback: str = ""
    log_tail: str = ""
    kind: str = CODE_ERROR  # its class: code error, disruption, lost peer or hang
    exit_code: int = 1  # as Kubernetes reports it: 128 + N for a death by signal N
    reported: bool = False  # its runtime wrote a failure message (error and traceback)
    disrupted: bool = False  # Kubernetes marked the pod DisruptionTarget (preempted, evicted)
    dump: str = ""  # where its debug dump went (debug_dump=True), as its runtime said
    error_types: tuple[str, ...] = ()  # its exception's class and bases, as its runtime said

    @classmethod
    def from_exit(
        cls,
        tag: str,
        termination_message: str | None,
        exit_code: int,
        log_tail: str = "",
        restartable: frozenset[int] = RESTARTABLE_EXIT_CODES,
    ) -> ProcessFailure:
        """From what the process left behind: its failure message if it wrote one, else its
        exit code and the tail of its log. The class is the one its runtime reported, else
        the exit code's (``restartable``: the codes the JobSet restarts on)."""
        kind, code = exit_class(exit_code, restartable), as_reported(exit_code)
        body = parse_message(termination_message)
        if body is not None and not body["ok"]:
            said = body.get("class")
            kind = said if isinstance(said, str) and len(said) < 20 else kind  # a pod's word
            error, trace = str(body.get("error", "")), str(body.get("traceback", ""))
            dump = body.get("dump")
            dump = dump[:MAX_DUMP_URI] if isinstance(dump, str) else ""
            types = body.get("types")
            named = tuple(t for t in types if isinstance(t, str)) if isinstance(types, list) else ()
            return cls(
                tag, error, trace, kind=kind, exit_code=code, reported=True, dump=dump,
                error_types=named,
            )  # fmt: skip
        # No word from its runtime: JAX may have aborted it for a peer's death (its log, or
        # the log tail Kubernetes puts in the termination message, says so).
        if code != 0 and log_shows_lost_peer(f"{termination_message or ''}\n{log_tail}"):
            kind = LOST_PEER
        error = describe_exit(exit_code)
        if code in NOT_STARTED_EXIT_CODES:  # say which command: the runtime's or the log's word
            said = _last_line(termination_message or "") or _last_line(log_tail)
            error = f"{error}: the command could not be started" + (f": {said}" if said else "")
        return cls(tag, error, log_tail, kind=kind, exit_code=code)

    def render(self) -> str:
        tail = self.traceback.rstrip().splitlines()[-TRACEBACK_LINES:]
        what = self.error if self.kind == CODE_ERROR else f"{self.kind}: {self.error}"
        lines = [f"{self.tag} {what}", *(f"    {line}" for line in tail)]
        if self.dump:
            lines.append(f"  its debug dump (stacks, traceback, log tail, HLO): {self.dump}")
        if log := self.log_tail.rstrip().splitlines()[-TRACEBACK_LINES:]:
            lines += ["  last lines of its log:", *(f"    {line}" for line in log)]
        return "\n".join(lines)


def restart_line(
    attempt: int, max_restarts: int, culprit: ProcessFailure | None, in_place: bool = False
) -> str:
    """One line per slice restart, the same from both backends: ``restart 1/3 after a
    disruption on [0/1]: killed by SIGKILL``; ``restart 1/3 in place after ...`` where the
    pods' containers restarted where they were (``restart_strategy="in_place"``)."""
    head = f"restart {attempt}/{max_restarts}" + (" in place" if in_place else "")
    if culprit is None and in_place:
        # The kubelet removes every container of a pod it restarts in place and reports
        # each one's last state as RestartingAllContainers, the exited one's too.
        return f"{head}: which host's program ended is not kept by the kubelet"
    if culprit is None:
        return f"{head}: its cause was not visible (pods gone)"
    return f"{head} after a {culprit.kind} on {culprit.tag}: " + (
        culprit.error.splitlines()[0][:300] if culprit.error else f"exit code {culprit.exit_code}"
    )


def culprit_rank(failure: ProcessFailure) -> int:
    """Root causes first: a host whose own runtime reported an error (a bug, a hang), then a
    disrupted one (preempted, evicted), then one that died on its own (SIGKILL, OOM), then
    hosts stopped with SIGTERM (how the rest are taken down), and last hosts that only lost a
    peer (they fail because another did), whether their runtime said so or JAX aborted them.
    A runtime's own report of a disruption says only that it got SIGTERM (its
    ``on_preemption`` ran): from a JobSet restart that stops the rest as readily as from a
    preemption, so it counts as disrupted only where Kubernetes marked the pod so."""
    if failure.kind == LOST_PEER:
        return 4
    if failure.reported and failure.kind != DISRUPTION:
        return 0
    if failure.disrupted:
        return 1
    return 3 if failure.exit_code == EXIT_SIGTERM or failure.reported else 2


def culprits_first(failures: Sequence[ProcessFailure]) -> list[ProcessFailure]:
    return sorted(failures, key=culprit_rank)


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def describe_exit(exit_code: int) -> str:
    """``exited with code 3``, or ``killed by SIGKILL`` for a negative (local) exit code."""
    if exit_code < 0:
        try:
            return f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    if exit_code > 128:  # how Kubernetes reports a death by signal N: 128 + N
        try:
            return (
                f"exited with code {exit_code} (killed by {signal.Signals(exit_code - 128).name})"
            )
        except ValueError:
            pass
    return f"exited with code {exit_code}"
