"""A capacity list: who walks it (Kueue's flavors, the provider, or a ComputeClass), what each
choice renders, and every contradiction refused at parse, naming the argument."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_jax.manifest.capacity_choices import (
    DEFAULT_CAPACITY_WAIT_S,
    CapacityChoices,
    capacity_of_selector,
)
from airflow_provider_jax.manifest.status import as_read, running_capacity
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator

CHOICES = ["reservation:my-res", "flex-start", "spot"]


def tpu(**kwargs: Any) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v6e-16",
        image="us-docker.pkg.dev/p/r/jax:1",
        command=["python3"],
        **kwargs,
    )


def pod(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]


def test_with_a_queue_kueues_flavors_choose_and_the_pods_select_no_capacity(validate_jobset):
    op = tpu(capacity=CHOICES, queue_name="tpu-queue")
    assert op.plan.capacity.by_kueue and op.plan.capacity.wait_for(0) is None
    manifest = op.dry_run()
    validate_jobset(manifest)
    selector = pod(manifest)["spec"]["nodeSelector"]
    assert not {"cloud.google.com/gke-spot", "cloud.google.com/reservation-name"} & set(selector)
    # A flavor may be flex-start: its ProvisioningRequest learns the run's length.
    annotations = pod(tpu(capacity=CHOICES, queue_name="q", execution_timeout=timedelta(hours=1)).dry_run())["metadata"]["annotations"]  # fmt: skip
    assert annotations["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "3660"


def test_without_a_queue_the_provider_walks_the_list_one_choice_at_a_time(validate_jobset):
    op = tpu(capacity=["reservation:my-res", "spot"])
    assert op.plan.capacity.by_provider
    assert op.plan.capacity.wait_for(0) == DEFAULT_CAPACITY_WAIT_S
    assert op.plan.capacity.wait_for(1) is None  # the last waits as a plain capacity does
    first = op.dry_run()
    validate_jobset(first)
    assert pod(first)["spec"]["nodeSelector"]["cloud.google.com/reservation-name"] == "my-res"
    assert first["metadata"]["annotations"]["jax.airflow.apache.org/capacity-choice"] == "0"
    op.capacity_choice = 1
    second = op.dry_run()
    assert pod(second)["spec"]["nodeSelector"]["cloud.google.com/gke-spot"] == "true"
    assert "cloud.google.com/reservation-name" not in pod(second)["spec"]["nodeSelector"]
    assert second["metadata"]["annotations"]["jax.airflow.apache.org/capacity-choice"] == "1"
    assert second["metadata"]["name"] == first["metadata"]["name"]  # one JobSet name per try


def test_capacity_wait_with_a_queue_makes_the_provider_walk_it():
    op = tpu(capacity=CHOICES, queue_name="q", capacity_wait=timedelta(minutes=3))
    assert op.plan.capacity.by_provider and op.plan.capacity.wait_for(1) == 180


def test_a_compute_class_is_selected_as_gke_documents_it(validate_jobset):
    manifest = tpu(compute_class="tpu-fallback").dry_run()
    validate_jobset(manifest)
    assert pod(manifest)["spec"]["nodeSelector"]["cloud.google.com/compute-class"] == "tpu-fallback"
    # The TPU's own selectors stay: the class provisions that slice shape.
    assert "cloud.google.com/gke-tpu-topology" in pod(manifest)["spec"]["nodeSelector"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": ["spot", "spot"]}, "capacity lists 'spot' twice"),
        ({"capacity": ["reservation:a", " reservation:a"]}, "'reservation:a' twice"),
        ({"capacity": ["reservation:", "spot"]}, "a reservation name is"),
        ({"capacity": []}, "capacity is an empty list"),
        ({"capacity": ["spot", 3]}, "every choice of the list must be a string"),
        ({"capacity": ["spot", "cheap"]}, "capacity must be one of"),
        ({"capacity": ["spot", "on-demand"], "capacity_wait": 0}, "capacity_wait must be"),
        ({"capacity": ["spot", "on-demand"], "capacity_wait": -5}, "capacity_wait must be"),
        ({"capacity": "spot", "capacity_wait": 60}, "with one capacity there is no next"),
        ({"compute_class": "Tpu_Class"}, "compute_class 'Tpu_Class' is no ComputeClass name"),
        ({"compute_class": "a" * 64}, "is no ComputeClass name"),
        ({"compute_class": "c", "capacity": "spot"}, "both choose the capacity"),
        (
            {"capacity": ["spot", "on-demand"], "reservation_project": "my-project-1"},
            "must hold exactly one reservation:<name>",
        ),
    ],
)
def test_contradictions_fail_at_parse_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tpu(**kwargs)


def test_each_choice_must_work_for_the_accelerator():
    with pytest.raises(ValueError, match="cannot be reserved"):
        JaxGpuJobOperator(
            task_id="t",
            accelerator="h100-80gb-1",
            image="i:1",
            command=["python3"],
            capacity=["reservation:r", "spot"],
        )
    with pytest.raises(ValueError, match="flex-start.*queue_name"):
        tpu(capacity=["reservation:r", "flex-start"])


@pytest.mark.parametrize(
    ("selector", "capacity"),
    [
        ({"cloud.google.com/gke-spot": "true"}, "spot"),
        ({"cloud.google.com/reservation-name": "r1"}, "reservation:r1"),
        ({"cloud.google.com/gke-queued": "true"}, "flex-start"),
        ({"cloud.google.com/compute-class": "c"}, "ComputeClass c"),
        ({"cloud.google.com/gke-nodepool": "p"}, "on-demand"),
    ],
)
def test_a_pod_selector_tells_its_capacity(selector, capacity):
    assert capacity_of_selector(selector) == capacity


def test_the_trimmed_jobset_a_triggerer_keeps_still_tells_its_capacity():
    manifest = tpu(capacity="spot").dry_run()
    assert running_capacity(as_read(manifest)) == "spot"
    manifest["spec"]["suspend"] = True
    assert running_capacity(as_read(manifest)) is None  # Kueue has not admitted it yet


def test_a_plain_capacity_parses_as_before():
    assert CapacityChoices.parse("spot").choices[0].kind == "spot"
    assert not CapacityChoices.parse("spot").by_provider
