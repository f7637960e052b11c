"""What the provider owns on the JobSet is checked once, on the final manifest after every
merge (``manifest/ownership.py``): no argument, by any path, sets it; the same value, or a key
the provider does not own, is taken."""

from __future__ import annotations

import pytest

from airflow_provider_jax.operators import JaxTpuSliceOperator

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "command": ["python3"]}
IRONWOOD = {**TPU, "accelerator": "tpu7x-4x4x8", "queue_name": "ironwood", "dynamic_slicing": True}


def override(metadata=None, spec=None):
    return {"pod_template_override": {"metadata": metadata or {}, "spec": spec or {}}}


REFUSED = [
    ({"node_selector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"}}, TPU,
     r"node_selector sets 'cloud.google.com/gke-tpu-accelerator'.*choose it with accelerator="),
    ({"node_selector": {"cloud.google.com/gke-tpu-topology": "2x2"}}, TPU,
     r"node_selector sets 'cloud.google.com/gke-tpu-topology'.*provider sets .*='4x4'"),
    (override({"annotations": {"cloud.google.com/gke-tpu-slice-topology": "4x4"}}), TPU,
     r"pod_template_override sets 'cloud.google.com/gke-tpu-slice-topology' in its pods'"),
    (override({"annotations": {"kueue.x-k8s.io/podset-slice-size": "4"}}), TPU,
     r"pod_template_override sets 'kueue.x-k8s.io/podset-slice-size'"),
    (override({"labels": {"kueue.x-k8s.io/queue-name": "q"}}), TPU,
     r"'kueue.x-k8s.io/queue-name' in its pods' labels.*use queue_name="),
    (override(spec={"nodeSelector": {"cloud.google.com/gke-tpu-topology": "4x4x4"}}), IRONWOOD,
     r"pod_template_override sets 'cloud.google.com/gke-tpu-topology'.*sets none for this job"),
    (override({"annotations": {"kueue.x-k8s.io/podset-slice-size": "2"}}), IRONWOOD,
     r"'kueue.x-k8s.io/podset-slice-size' in its pods' annotations, but the provider sets"),
    ({"annotations": {"kueue.x-k8s.io/podset-preferred-topology": "x"}}, TPU,
     r"annotations sets 'kueue.x-k8s.io/podset-preferred-topology'.*placement="),
]  # fmt: skip


@pytest.mark.parametrize(("given", "base", "message"), REFUSED)
def test_no_path_sets_what_the_provider_owns(given, base, message):
    with pytest.raises(ValueError, match=message):
        JaxTpuSliceOperator(**{**base, **given})


@pytest.mark.parametrize(
    "given",
    [
        {"node_selector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}},  # the same
        {"node_selector": {"cloud.google.com/gke-nodepool": "pool-1"}},  # not the provider's
        override({"annotations": {"team": "x"}}, {"nodeSelector": {"disk": "ssd"}}),
        {"labels": {"team": "research"}, "annotations": {"owner": "me"}},
    ],
)
def test_what_the_provider_does_not_own_or_sets_the_same_is_taken(given):
    JaxTpuSliceOperator(**{**TPU, **given})
