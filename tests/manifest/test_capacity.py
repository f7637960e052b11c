"""Each capacity choice renders what GKE documents for it, placement renders Kueue's topology
annotations, every manifest validates against the JobSet CRD, and combinations that cannot
work fail at parse naming the rule."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_jax.manifest.capacity import described
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator


def tpu(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("accelerator", "tpu-v6e-16")
    return JaxTpuSliceOperator(
        task_id="train", image="us-docker.pkg.dev/p/r/jax:1", command=["python3"], **kwargs
    ).dry_run()


def gpu(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("accelerator", "h100-80gb-8")
    return JaxGpuJobOperator(
        task_id="train",
        image="us-docker.pkg.dev/p/r/jax:1",
        command=["python3"],
        num_nodes=2,
        **kwargs,
    ).dry_run()


def pod(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]


def test_on_demand_adds_nothing(validate_jobset):
    manifest = tpu()
    validate_jobset(manifest)
    assert not any(
        k.startswith("cloud.google.com/gke-spot") for k in pod(manifest)["spec"]["nodeSelector"]
    )
    assert described(manifest) is None


def test_spot_selects_and_tolerates_spot_nodes(validate_jobset):
    manifest = tpu(capacity="spot")
    validate_jobset(manifest)
    spec = pod(manifest)["spec"]
    assert spec["nodeSelector"]["cloud.google.com/gke-spot"] == "true"
    assert {
        "key": "cloud.google.com/gke-spot",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    } in spec["tolerations"]
    assert described(manifest) == "cloud.google.com/gke-spot=true"


def test_a_reservation_is_selected_by_name_with_specific_affinity(validate_jobset):
    manifest = gpu(capacity="reservation:h100-pool", reservation_project="shared-capacity")
    validate_jobset(manifest)
    assert (
        pod(manifest)["spec"]["nodeSelector"].items()
        >= {
            "cloud.google.com/reservation-name": "h100-pool",
            "cloud.google.com/reservation-affinity": "specific",
            "cloud.google.com/reservation-project": "shared-capacity",
        }.items()
    )


def test_flex_start_goes_through_kueue_and_queued_nodes(validate_jobset):
    manifest = tpu(capacity="flex-start", queue_name="dws", execution_timeout=timedelta(hours=4))
    validate_jobset(manifest)
    assert manifest["spec"]["suspend"] is True  # Kueue admits it once the request is provisioned
    template = pod(manifest)
    assert template["spec"]["nodeSelector"]["cloud.google.com/gke-queued"] == "true"
    assert {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"} in (
        template["spec"]["tolerations"]
    )
    # The request's run time: execution_timeout plus the cluster deadline's grace.
    assert template["metadata"]["annotations"]["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == (
        str(4 * 3600 + 60)
    )


@pytest.mark.parametrize(
    ("placement", "key", "label"),
    [
        ("compact", "kueue.x-k8s.io/podset-preferred-topology", "kubernetes.io/hostname"),
        (
            "required:block",
            "kueue.x-k8s.io/podset-required-topology",
            "cloud.google.com/gce-topology-block",
        ),
        (
            "preferred:subblock",
            "kueue.x-k8s.io/podset-preferred-topology",
            "cloud.google.com/gce-topology-subblock",
        ),
    ],
)
def test_placement_renders_kueue_topology_annotations(validate_jobset, placement, key, label):
    for manifest in (
        gpu(placement=placement, queue_name="q"),
        tpu(placement=placement, queue_name="q", accelerator="tpu-v5litepod-16", num_slices=2),
    ):
        validate_jobset(manifest)
        assert pod(manifest)["metadata"]["annotations"][key] == label


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": "preemptible"}, "capacity must be one of"),
        ({"capacity": "reservation:"}, "a reservation name is 1-63 lowercase"),
        ({"capacity": "spot", "reservation_project": "p-12345"}, "reservation_project needs"),
        ({"capacity": "flex-start"}, "set queue_name to a LocalQueue"),
        (
            {"capacity": "flex-start", "queue_name": "q", "execution_timeout": timedelta(days=8)},
            "run at most 7 days",
        ),
        (
            {"capacity": "spot", "node_selector": {"cloud.google.com/gke-spot": "false"}},
            "drop it from node_selector",
        ),
        ({"placement": "compact"}, "one TPU slice is already one ICI-connected node pool"),
        ({"placement": "required:rack", "num_slices": 2}, "placement must be 'compact'"),
        ({"placement": "compact", "num_slices": 2}, "Topology Aware Scheduling: set queue_name"),
        ({"queue_timeout": 0}, "queue_timeout must be a timedelta or seconds > 0"),
        ({"queue_timeout": "1h"}, "queue_timeout must be a timedelta or seconds > 0"),
        ({"queue_timeout_until": "scheduled"}, "queue_timeout_until must be one of"),
        ({"queue_timeout_until": "admitted"}, "waits for Kueue: set queue_name"),
    ],
)
def test_combinations_that_cannot_work_fail_at_parse(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tpu(**{"accelerator": "tpu-v5litepod-16", **kwargs})


def test_queue_timeout_is_kept_as_seconds_for_the_trigger():
    op = JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v6e-16",
        image="us-docker.pkg.dev/p/r/jax:1",
        command=["python3"],
        queue_name="q",
        queue_timeout=timedelta(hours=2),
        queue_timeout_until="admitted",
    )
    assert (op.plan.watch.queue_timeout, op.plan.watch.queue_until) == (7200.0, "admitted")


def test_a3_high_with_fewer_than_8_gpus_cannot_be_reserved():
    with pytest.raises(ValueError, match="a3-highgpu-4g .fewer than 8 H100s. cannot be reserved"):
        gpu(accelerator="h100-80gb-4", capacity="reservation:r1")
    gpu(accelerator="h100-80gb-4", capacity="spot")  # Spot is how they come
