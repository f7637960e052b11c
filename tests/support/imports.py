"""What importing something loads, measured in a fresh interpreter (the test session has long
imported everything)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.jobset_schema import REPO

# Never at DAG parse: the scheduler imports DAG files every few seconds.
HEAVY = (
    "jax",
    "jaxlib",
    "orbax",
    "tensorstore",
    "kubernetes",
    "kubernetes_asyncio",
    "gcloud",
    "google.cloud.",  # the bare namespace package is preloaded by a .pth file; its modules are not
    "google.api_core",
    "airflow.providers.google.cloud",
)


def modules_loaded_by(code: str) -> list[str]:
    """Every module in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json as _j, sys as _s\nprint(_j.dumps(sorted(_s.modules)))\n"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def heavy_modules_loaded_by(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return [
        m
        for m in modules_loaded_by(code)
        if any(
            m.startswith(h) if h.endswith(".") else m == h or m.startswith(h + ".") for h in heavy
        )
    ]
