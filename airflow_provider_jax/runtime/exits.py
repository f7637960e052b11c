"""How a JAX process's exit says what kind of failure it was, so the cluster can tell a bug
(fail now) from a disruption (restart the slice).

Stdlib only. The exit codes are the contract with the JobSet's pod failure policy: a code
outside :data:`RESTARTABLE_EXIT_CODES` fails the JobSet at once. xpk's policy restarts on
{42, 127-255}; 129-255 are every death by signal (128 + N: SIGKILL 137, SIGTERM 143, SIGABRT
134), but 126-128 mean the command never ran: not executable (126) or not found (127) as a
shell or a local pod's init says it, and a container the runtime could not start (128,
containerd's ``StartError``). A typo in ``python=`` must not recreate a whole slice
``max_restarts`` times, so those fail at once.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_CODE_ERROR = 1  # the user's code raised
EXIT_DISRUPTED = 42  # restart me: a peer was lost (xpk's and MaxText's restartable code)
EXIT_HUNG = 124  # the watchdog found no progress (as timeout(1) exits)
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143: a process asked to stop (or preempted, after a save)
EXIT_NOT_FOUND = 127  # the command does not exist (a shell's, and the local pod init's, code)
# The command never ran: not executable, not found, or the container runtime could not start
# it (kubelet reports containerd's StartError with exit code 128).
NOT_STARTED_EXIT_CODES = frozenset({126, EXIT_NOT_FOUND, 128})
RESTARTABLE_EXIT_CODES = frozenset({EXIT_DISRUPTED, EXIT_HUNG, *range(129, 256)})

CODE_ERROR, DISRUPTION, LOST_PEER, HUNG = "code error", "disruption", "lost peer", "hang"
RESULT_ERROR = "result error"  # the function returned a value that cannot come back as JSON
# The code a runtime ends with once it has reported a failure of each class.
EXIT_CODE_OF = {CODE_ERROR: EXIT_CODE_ERROR, RESULT_ERROR: EXIT_CODE_ERROR,
                LOST_PEER: EXIT_DISRUPTED, HUNG: EXIT_HUNG, DISRUPTION: EXIT_SIGTERM}  # fmt: skip

# What JAX raises in the survivors when a peer dies mid-collective or stops heartbeating: Gloo
# on CPU, NCCL on GPU, the coordination service everywhere. Seen here with host 1 SIGKILLed:
# "JaxRuntimeError: ... Gloo AllGather failed ... Connection reset by peer" within ms.
_JAX_ERRORS = ("JaxRuntimeError", "XlaRuntimeError")
_PEER_LOST = re.compile(
    r"connection reset by peer|connection refused|broken pipe|socket closed|end of file|"
    r"gloo\b.*\bfailed|nccl\b.*(remote|system error|timeout|aborted)|heartbeat|"
    r"coordination service|barrier timed out|\bUNAVAILABLE\b|DEADLINE_EXCEEDED|"
    r"task .* (disconnected|has stopped|not responding)",
    re.IGNORECASE,
)


# What JAX's coordination service leaves in a survivor's log when it aborts the process (a
# C++ check failure, SIGABRT) because a peer died: seen on the real control plane with host 1
# killed, host 0's "CoordinationServiceAgent::SetError ... Shutdown barrier has failed".
_ABORTED_BY_COORDINATION = re.compile(
    r"CoordinationService(Agent|Error)|Shutdown barrier has failed|has likely restarted",
)


def log_shows_lost_peer(log: str) -> bool:
    """Whether a process that died without a word (no failure message) was aborted by JAX's
    coordination service for a peer's death, from the tail of its log."""
    return bool(_ABORTED_BY_COORDINATION.search(log))


def is_lost_peer(err: BaseException) -> bool:
    """Whether ``err`` is JAX reporting that another process went away, not a bug here."""
    names = {cls.__name__ for cls in type(err).__mro__}
    return bool(names.intersection(_JAX_ERRORS)) and bool(_PEER_LOST.search(str(err)))


def as_reported(code: int) -> int:
    """An exit code as Kubernetes reports it: a local ``-N`` (killed by signal N) is 128 + N."""
    return 128 - code if code < 0 else code


def exit_class(code: int, restartable: frozenset[int] = RESTARTABLE_EXIT_CODES) -> str:
    """The class of a failed process from its exit code (a local ``-N`` is signal N)."""
    code = as_reported(code)
    if code == EXIT_HUNG:
        return HUNG
    return DISRUPTION if code in restartable else CODE_ERROR


_before_exit: list[Callable[[], None]] = []


def before_exit(action: Callable[[], None]) -> None:
    """Run ``action`` before the process ends through :func:`end` (``os._exit`` skips
    ``atexit``): the debug dump's log tail, which must give back what it still holds."""
    _before_exit.append(action)


def end(code: int) -> NoReturn:
    """End the process now with ``code``, after the :func:`before_exit` actions and with the
    streams flushed; never a normal exit, whose clean-up can wait on peers for minutes."""
    for action in _before_exit:
        try:
            action()
        except Exception as err:  # the exit code matters more than any clean-up
            print(f"airflow-jax: {err}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
