"""Every test here runs against the real control plane (``tests/support/real_cluster``)."""

import pytest
from kubernetes import client, config

from tests.support.real_cluster.control_plane import ControlPlane

KUEUE = ("kueue.x-k8s.io", "v1beta2")

pytest_plugins = ["tests.support.real_cluster.fixtures"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/real_cluster/" in str(item.fspath):
            item.add_marker(pytest.mark.real_cluster)


@pytest.fixture(scope="session")
def queues(real_cluster: ControlPlane) -> client.CustomObjectsApi:
    api = client.CustomObjectsApi(config.new_client_from_config(str(real_cluster.kubeconfig())))
    group, version = KUEUE
    flavor = {
        "apiVersion": f"{group}/{version}",
        "kind": "ResourceFlavor",
        "metadata": {"name": "tpu-v5e"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}},
    }
    cluster_queue = {
        "apiVersion": f"{group}/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "tpu"},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [
                        {
                            "name": "tpu-v5e",
                            "resources": [{"name": "google.com/tpu", "nominalQuota": 8}],
                        }
                    ],
                }
            ],
        },
    }
    local_queue = {
        "apiVersion": f"{group}/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": "tpu-queue", "namespace": "default"},
        "spec": {"clusterQueue": "tpu"},
    }
    for name, value in (("low", 10), ("high", 1000)):
        api.create_cluster_custom_object(
            group,
            version,
            "workloadpriorityclasses",
            {
                "apiVersion": f"{group}/{version}",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    api.create_cluster_custom_object(group, version, "resourceflavors", flavor)
    api.create_cluster_custom_object(group, version, "clusterqueues", cluster_queue)
    api.create_namespaced_custom_object(group, version, "default", "localqueues", local_queue)
    return api  # fmt: skip
