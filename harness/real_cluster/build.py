"""Where the control plane's binaries are, built by ``tools/control-plane/build.sh`` from the
Go modules pinned in ``tools/control-plane/versions.env`` (a no-op once they are cached)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.real_cluster.components import ControlPlaneError, log_tail

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools" / "control-plane"
CACHE = Path(os.environ.get("CONTROL_PLANE_CACHE", REPO / ".cache" / "control-plane"))


def versions() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (TOOLS / "versions.env").read_text().splitlines())
    return {k.strip(): v.strip() for k, v in (p for p in pairs if len(p) == 2) if k[:1] != "#"}


def binaries() -> dict[str, Path]:
    """Where ``build.sh`` puts each component (keyed by its version and flags)."""
    out = subprocess.run(
        ["bash", str(TOOLS / "build.sh"), "--where"], capture_output=True, text=True, check=True
    ).stdout
    return {name: Path(path) for name, _, path in (line.partition("=") for line in out.split())}


def build() -> dict[str, Path]:
    """Build what is missing (a no-op when every binary is cached) and return the paths."""
    paths = binaries()
    if missing := [name for name, path in paths.items() if not path.exists()]:
        if shutil.which("go") is None:
            raise ControlPlaneError("building the control plane needs Go (`go` is not on PATH)")
        log = CACHE / "build.log"
        CACHE.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            done = subprocess.run(
                ["bash", str(TOOLS / "build.sh"), *missing], stdout=out, stderr=subprocess.STDOUT
            )
        if done.returncode != 0:
            raise ControlPlaneError(
                f"building {', '.join(missing)} failed; the end of {log}:\n{log_tail(log, 40)}"
            )
    return paths
