"""Run a command as a newcomer would type it: in a new shell at the repository root, with no
variable from the test's environment but ``PATH`` and ``HOME``."""

from __future__ import annotations

import os
import subprocess

from tests.support.jobset_schema import REPO

FRESH_ENV = {"PATH": "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME": os.environ["HOME"]}


def fresh_shell(code: str, timeout: float = 540) -> tuple[int, str]:
    """``code`` run by ``bash -euo pipefail``: its exit status and its output (both streams)."""
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=REPO,
        env=FRESH_ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout + done.stderr
