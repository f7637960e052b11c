"""Every test here runs against the real control plane (``tests/support/real_cluster``)."""

import pytest

pytest_plugins = ["tests.support.real_cluster.fixtures"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/real_cluster/" in str(item.fspath):
            item.add_marker(pytest.mark.real_cluster)
