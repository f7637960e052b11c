"""An earlier commit's ``airflow_provider_jax``, to measure beside the working tree's in one
run on one machine: figures taken on different days or machines do not compare.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

# The code as #38 found it: the last commit before that round's first change.
OLD_CODE = "ab8cdf0"
ROOT = Path(__file__).resolve().parents[1]


def extract(ref: str, work: Path) -> Path | None:
    """``ref``'s package under ``work`` (a folder to put first on ``PYTHONPATH``), or None,
    said why, where this clone lacks it (a shallow clone)."""
    try:
        archive = subprocess.run(
            ["git", "archive", ref, "airflow_provider_jax"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        why = getattr(err, "stderr", b"") or str(err).encode()
        print(f"  no side-by-side run: {ref} is not in this clone ({why.decode().strip()})")
        return None
    into = work / f"code-{ref}"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into
