"""The benches that start a real cluster (real nodes, ``bench.__main__.REAL_NODES``, or the
control plane alone), each end to end at its quick size, in the cluster worker
(``tests/support/cluster_worker.py``): one cluster at a time. ``tests/test_bench.py`` runs the
others."""

from __future__ import annotations

import pytest

from tests.support.bench_runs import STARTS_A_CLUSTER, run_quick

pytestmark = [pytest.mark.slow, pytest.mark.real_cluster]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(STARTS_A_CLUSTER))
def test_each_real_node_bench_runs_and_states_its_targets(name: str):
    run_quick(name, timeout=540)
