"""Every test here runs against the real control plane (``harness/real_cluster``)."""

import pytest
from kubernetes import client, config

from harness.real_cluster.components import ControlPlaneError
from harness.real_cluster.control_plane import ControlPlane

KUEUE = ("kueue.x-k8s.io", "v1beta2")


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


@pytest.fixture(autouse=True)
def _leave_nothing(request: pytest.FixtureRequest):
    """Each test gets the shared cluster without another's JobSets or pods (a failed test
    leaves its slices running, which would hold the nodes and the queue for the next)."""
    yield
    if "real_cluster" not in request.fixturenames:
        return
    plane = request.getfixturevalue("real_cluster")
    api = plane.api()
    jobsets = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    for jobset in api.get(jobsets)["items"]:
        api.delete(f"{jobsets}/{jobset['metadata']['name']}", body)  # a deleting one may go first
    # A Job whose JobSet is gone. JobSet v0.12's controller, its cache stale after a
    # kube-apiserver restart (test_watch), can recreate a child Job of a finished JobSet just
    # as the JobSet is deleted, and again after that Job is deleted; the garbage collector
    # takes such a Job only in minutes. So each look deletes those Jobs again.
    # Likewise a pod that a Job's controller created as its JobSet was being deleted, seconds
    # after its creation (test_injected_failures): its Job is gone, and the garbage collector
    # takes such a pod only in minutes here.
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    pods = "/api/v1/namespaces/default/pods"

    def orphans(path: str, owners_left: set[str]) -> None:
        for item in api.get(path)["items"]:
            meta = item["metadata"]
            owners = {o["name"] for o in meta.get("ownerReferences") or ()}
            if owners and not owners & owners_left and not meta.get("deletionTimestamp"):
                api.delete(f"{path}/{meta['name']}", body)

    def gone() -> bool:
        left = {j["metadata"]["name"] for j in api.get(jobsets)["items"]}
        orphans(jobs, left)
        orphans(pods, {j["metadata"]["name"] for j in api.get(jobs)["items"]})
        return not left and not api.get(pods)["items"]

    try:
        api.wait_for("every pod of the test gone", gone, timeout=90)
    except ControlPlaneError as err:  # say what stayed, for whoever reads the failure
        kinds = {"jobsets": jobsets, "jobs": jobs, "pods": pods}
        left = {k: [o["metadata"]["name"] for o in api.get(v)["items"]] for k, v in kinds.items()}
        raise ControlPlaneError(f"{err}; left: {left}") from None
