"""A capacity list on the real control plane, through ``airflow dags test``: the node pools
carry GKE's capacity labels (a Spot pool, and no node of the reservation the list names
first). Without Kueue the provider deletes the first choice once ``capacity_wait`` passes and
submits the next, deferred and in the worker alike; behind Kueue the ClusterQueue's flavor
order picks Spot, and the task log, the goodput ledger and the ``admission`` XCom say so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kubernetes import client, config

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import dags_test

DAGS = Path(__file__).parent / "dags"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TPU_ACCELERATOR = {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}


def _flavor(name: str, labels: dict[str, str]) -> dict:
    return {
        "apiVersion": "/".join(KUEUE),
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {**TPU_ACCELERATOR, **labels}},
    }


@pytest.fixture(scope="module")
def capacity_queue(real_cluster: ControlPlane):
    """The platform team's queue of docs/kueue.md: the reservation first (no quota left
    here), then Spot."""
    api = client.CustomObjectsApi(config.new_client_from_config(str(real_cluster.kubeconfig())))
    group, version = KUEUE
    flavors = [
        _flavor("reservation-held", {"cloud.google.com/reservation-name": "held-elsewhere"}),
        _flavor("spot-v5e", {"cloud.google.com/gke-spot": "true"}),
    ]
    quota = {"reservation-held": 0, "spot-v5e": 8}
    cluster_queue = {
        "apiVersion": f"{group}/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "capacity"},
        "spec": {
            "namespaceSelector": {},
            "flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
            },
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [
                        {
                            "name": f["metadata"]["name"],
                            "resources": [
                                {
                                    "name": "google.com/tpu",
                                    "nominalQuota": quota[f["metadata"]["name"]],
                                }
                            ],
                        }
                        for f in flavors
                    ],
                }
            ],
        },
    }
    local_queue = {
        "apiVersion": f"{group}/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": "capacity-queue", "namespace": "default"},
        "spec": {"clusterQueue": "capacity"},
    }
    for flavor in flavors:
        api.create_cluster_custom_object(group, version, "resourceflavors", flavor)
    api.create_cluster_custom_object(group, version, "clusterqueues", cluster_queue)
    api.create_namespaced_custom_object(group, version, "default", "localqueues", local_queue)
    return api


@pytest.fixture(scope="module")
def run(real_cluster: ControlPlane, capacity_queue, airflow_home: AirflowHome, tmp_path_factory):
    out = tmp_path_factory.mktemp("capacity")
    return dags_test(
        airflow_home,
        DAGS,
        "jax_capacity",
        out,
        400,
        AIRFLOW_CONN_KUBERNETES_DEFAULT=connection(real_cluster.kubeconfig()),
    )


def recorded(run: dict, name: str) -> dict:
    return json.loads((run["out"] / f"{name}.json").read_text())


@pytest.mark.parametrize("task", ["deferred", "in_worker"])
def test_the_provider_falls_back_to_the_next_choice_with_one_jobset_at_a_time(run, task):
    log = run["proc"].stdout
    assert run["states"][task][0] == "success", log[-6000:]
    assert recorded(run, task)["result"]["step"] == 3
    assert recorded(run, task)["admission"] == {"capacity": "spot"}
    # Why it moved on, in the task log: the reservation's pods waited unschedulable.
    said = re.search(
        r"Capacity reservation:held-elsewhere \(choice 1 of 2\): .*no capacity within "
        r"capacity_wait \(12s\); last: waiting: pod \S+ .*unschedulable.*trying spot next",
        log,
    )
    assert said, log[-6000:]


def test_each_fallback_deletes_the_first_jobset_before_creating_the_next(run):
    """One name per task instance: the next choice is created once the first is gone."""
    log = run["proc"].stdout
    created = re.findall(r"Created JobSet default/(\S+) \(uid (\S+)\)\.", log)
    by_name: dict[str, list[str]] = {}
    for name, uid in created:
        by_name.setdefault(name, []).append(uid)
    two = [uids for uids in by_name.values() if len(uids) == 2]
    assert len(two) == 2, created  # deferred and in_worker: a JobSet per choice, in turn
    assert all(len(set(uids)) == 2 for uids in two)


def test_kueues_flavor_order_admits_on_spot_and_says_so(run):
    log = run["proc"].stdout
    assert run["states"]["by_kueue"][0] == "success", log[-6000:]
    assert "admitted by Kueue (ClusterQueue capacity) on flavor spot-v5e (spot)" in log
    admission = recorded(run, "by_kueue")["admission"]
    assert admission == {"capacity": "spot", "cluster_queue": "capacity", "flavor": "spot-v5e"}
    assert recorded(run, "by_kueue")["goodput"]["admission"] == admission


def test_nothing_is_left_on_the_cluster(run, real_cluster: ControlPlane):
    api = real_cluster.api()
    assert not api.get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets")["items"]
