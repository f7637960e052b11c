"""``make bench`` can't break unseen: every bench runs end to end at its quick size (seconds)
and states its targets. The figures are no verdict here (small N, a machine busy with the
tests); the full benches in ``make bench`` fail on a missed target."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from bench.__main__ import BENCHES
from tests.support.jobset_schema import REPO

# Every bench in its quick mode: make check skips it.
pytestmark = pytest.mark.slow


@pytest.mark.timeout(600)
def test_every_bench_runs_and_states_its_targets():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    for name in BENCHES:
        section = out.split(f"== {name}\n", 1)[1].split("\n== ", 1)[0]
        assert re.search(r"\(target [<>]= [\d.]+", section), f"{name} states no target:\n{section}"
        assert "Traceback" not in section, section[-3000:]
