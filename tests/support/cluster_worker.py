"""One real cluster at a time: under pytest-xdist, every test file that starts a cluster runs
in the same worker (the first), one after another, while the other worker takes the rest.

Two workers would each start a cluster of their own: seven kubelets, kube-proxies and
containerds each on a 2-core machine, and every one holds inotify instances, of which the
machine gives a user 128 (``fs.inotify.max_user_instances``), all of root's processes
together: two clusters and a MultiKueue drill's two more do not fit. Scheduling is
``--dist loadfile``'s (a file at a time, its module fixtures set up once), with that one rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

# Where the tests that start a real cluster are (the ``real_cluster`` tier, the docs' ``make
# cluster`` blocks, the quick runs of the benches that start a cluster): a test of that tier
# elsewhere is refused at collection.
CLUSTER_FILES = (
    "tests/real_cluster/",
    "tests/harness/test_reaper.py",
    "tests/harness/held_services.py",  # the run the reaper's test kills
    "tests/test_docs_commands.py",
    "tests/test_bench_real_nodes.py",
    "tests/compose/test_kubernetes_backend_in_compose.py",
)


def starts_a_cluster(scope: str) -> bool:
    return scope.startswith(CLUSTER_FILES)


class OneClusterScheduling(LoadFileScheduling):
    """``loadfile``, but the files that start a cluster go to the first worker only, first."""

    def _takes(self, node: Any, scope: str) -> bool:
        return not starts_a_cluster(scope) or (bool(self.nodes) and node is self.nodes[0])

    def _assign_work_unit(self, node: Any) -> None:
        takeable = [scope for scope in self.workqueue if self._takes(node, scope)]
        if not takeable:
            return
        clusters = [scope for scope in takeable if starts_a_cluster(scope)]
        scope = (clusters or takeable)[0]
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done]
        )

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not any(self._takes(node, scope) for scope in self.workqueue):
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 2:
            return
        self._assign_work_unit(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") == "loadfile":
        return OneClusterScheduling(config, log)
    return None


@pytest.hookimpl(trylast=True)  # after tests/conftest.py has marked the tiers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    stray = [
        item.nodeid
        for item in items
        if item.get_closest_marker("real_cluster") and not starts_a_cluster(item.nodeid)
    ]
    if stray:
        raise pytest.UsageError(
            f"tests that start a real cluster outside {CLUSTER_FILES} "
            f"(tests/support/cluster_worker.py): {stray}"
        )
