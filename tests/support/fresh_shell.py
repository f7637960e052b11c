"""Run a command as a newcomer would type it: in a new shell at the repository root, with no
variable from the test's environment but ``PATH`` and ``HOME``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from tests.support.jobset_schema import REPO

FRESH_ENV = {"PATH": "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME": os.environ["HOME"]}


def fresh_shell(
    code: str, timeout: float = 540, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """``code`` run by ``bash -euo pipefail`` (with ``env`` besides ``PATH`` and ``HOME``):
    its exit status and its output (both streams). On the timeout its whole process group is
    killed, not the shell alone."""
    with subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=REPO,
        env={**FRESH_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as shell:
        try:
            out, _ = shell.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)
            shell.communicate()
            raise
    return shell.returncode, out
