"""The benches that start real nodes (``bench.__main__.REAL_NODES``), each end to end at its
quick size, in the cluster worker (``tests/support/cluster_worker.py``): one cluster at a time.
``tests/test_bench.py`` runs the others."""

from __future__ import annotations

import pytest

from bench.__main__ import REAL_NODES
from tests.support.bench_runs import run_quick

pytestmark = [pytest.mark.slow, pytest.mark.real_cluster]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(REAL_NODES))
def test_each_real_node_bench_runs_and_states_its_targets(name: str):
    run_quick(name, timeout=540)
