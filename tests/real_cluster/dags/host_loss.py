"""A host lost to a hardware fault, as its process sees it: killed outright (SIGKILL)."""

from __future__ import annotations

import os
import signal


def lose_this_host() -> None:
    """End this process as SIGKILL does. In a container the program is its pid namespace's
    first process (PID 1), which Linux shields from every signal it has no handler for when
    sent from inside that namespace, SIGKILL included: there it ends at once with the status a
    killed process has (exit code 137, as the kubelet reports a SIGKILLed container), running
    nothing more."""
    if os.getpid() == 1:
        os._exit(128 + signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
