"""Run a command as a newcomer would type it: in a new shell at the repository root, with no
variable from the test's environment but ``PATH`` and ``HOME``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from harness import reaper
from tests.support.jobset_schema import REPO

FRESH_ENV = {"PATH": "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME": os.environ["HOME"]}


def fresh_shell(
    code: str,
    timeout: float = 540,
    env: dict[str, str] | None = None,
    reaper_folder: Path | None = None,
) -> tuple[int, str]:
    """``code`` run by ``bash -euo pipefail`` (with ``env`` besides ``PATH`` and ``HOME``):
    its exit status and its output (both streams). However the wait ends (its timeout, with
    the output on the error, or the test's own interruption), its whole process group is
    killed, not the shell alone; ``reaper_folder``: a reaper's registry the shell's group is
    entered in, so a killed test run takes it too."""
    shell = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=REPO,
        env={**FRESH_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    if reaper_folder is not None:
        reaper.register_group(shell.pid, reaper_folder)
    try:
        out, _ = shell.communicate(timeout=timeout)
    except BaseException as err:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        out, _ = shell.communicate()
        if isinstance(err, subprocess.TimeoutExpired):
            err.output = out
        raise
    return shell.returncode, out
