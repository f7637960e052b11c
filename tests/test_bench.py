"""``make bench`` can't break unseen: every bench that starts no real cluster runs end to end
at its quick size and states its targets. The figures are no verdict here (small N, a machine
busy with the tests); the full benches in ``make bench`` fail on a missed target. The benches
that start one run in the cluster worker (``tests/test_bench_real_nodes.py``)."""

from __future__ import annotations

import pytest

from bench.__main__ import BENCHES
from tests.support.bench_runs import STARTS_A_CLUSTER, run_quick

# Every bench in its quick mode: make check skips it.
pytestmark = pytest.mark.slow


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [name for name in BENCHES if name not in STARTS_A_CLUSTER])
def test_each_bench_runs_and_states_its_targets(name: str):
    run_quick(name, timeout=540)
