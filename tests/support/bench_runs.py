"""One bench in its quick mode, as ``python -m bench --quick NAME`` runs it: what the two bench
tests share (``tests/test_bench.py``, ``tests/test_bench_real_nodes.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from bench.__main__ import REAL_NODES
from tests.support.jobset_schema import REPO

# The benches that start a real cluster: real nodes, or the control plane alone (the shared
# watch on the real kube-apiserver).
STARTS_A_CLUSTER = REAL_NODES | {"real_apiserver_watch"}


def run_quick(name: str, timeout: float) -> None:
    """Run bench ``name`` at its quick size: it must end with 0, state a target and print no
    traceback (its figures are no verdict here: small N, a machine busy with the tests)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", name],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert f"== {name}\n" in out, out[-6000:]  # not "== name: not present, skipped"
    section = out.split(f"== {name}\n", 1)[1].split("\n== ", 1)[0]
    assert re.search(r"\(target [<>]= [\d.]+", section), f"{name} states no target:\n{section}"
    assert "Traceback" not in section, section[-3000:]
