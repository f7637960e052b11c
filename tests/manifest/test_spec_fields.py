"""Every field of ``JaxJobSpec`` reaches the JobSet: a value other than its default changes
what ``build_jobset`` renders, on both build paths (``build.py``, and ``pathways_build.py``
when the spec has ``pathways``). A field that Pathways has no use for is refused beside it, or
declared in ``pathways_build.NOT_FOR_PATHWAYS`` with the reason; none is silently dropped."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from airflow_provider_jax.manifest.accelerators import parse_gpu, parse_tpu
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.capacity_choices import CapacityChoices
from airflow_provider_jax.manifest.data_inputs import Data
from airflow_provider_jax.manifest.named_storage import Storage
from airflow_provider_jax.manifest.pathways import Pathways
from airflow_provider_jax.manifest.pathways_build import NOT_FOR_PATHWAYS
from airflow_provider_jax.manifest.secret_refs import SecretRef
from airflow_provider_jax.manifest.spec import JaxJobSpec
from tests.support.job_specs import spec

TPU = parse_tpu("tpu-v6e-16")
GPU = parse_gpu("h100-mega-80gb-8", gpus_per_node=None, num_nodes=2)
FUSE = (Data("gs://bkt/data", fuse=True),)
AGENT = {"restart_strategy": "in_place", "restart_agent_image": "registry.example/agent:1"}
# Each field: a value other than its default, what it needs beside it, and the accelerator.
SAMPLES: dict[str, tuple[Any, dict[str, Any], Any]] = {
    "name": ("train-other", {}, TPU),
    "accelerator": (parse_tpu("tpu-v6e-32"), {}, TPU),
    "image": ("us-docker.pkg.dev/p/r/jax:2", {}, TPU),
    "command": (["python3", "other.py"], {}, TPU),
    "namespace": ("ml", {}, TPU),
    "num_slices": (2, {}, TPU),
    "env": ({"A": "b"}, {}, TPU),
    "resources": ({"requests": {"cpu": "1"}}, {}, TPU),
    "labels": ({"team": "ml"}, {}, TPU),
    "annotations": ({"example.com/a": "b"}, {}, TPU),
    "service_account_name": ("trainer", {}, TPU),
    "node_selector": ({"pool": "a"}, {}, TPU),
    "tolerations": (({"key": "k", "operator": "Exists"},), {}, TPU),
    "volumes": (({"name": "data", "emptyDir": {}},), {}, TPU),
    "volume_mounts": (
        ({"name": "data", "mountPath": "/data"},),
        {"volumes": ({"name": "data", "emptyDir": {}},)},
        TPU,
    ),
    "max_restarts": (7, {}, TPU),
    "restart_on_exit_codes": ((7,), {}, TPU),
    "restart_strategy": ("in_place", {"restart_agent_image": AGENT["restart_agent_image"]}, TPU),
    "restart_agent_image": ("registry.example/agent:2", AGENT, TPU),
    "local_checkpoint_size": ("1Gi", {}, TPU),
    "multi_tier_checkpointing": (True, {"local_checkpoint_size": "1Gi"}, TPU),
    "termination_grace_period": (30, {}, TPU),
    "active_deadline_seconds": (3600, {}, TPU),
    "ttl_seconds_after_finished": (60, {}, TPU),
    "priority_class_name": ("high", {}, TPU),
    "queue_name": ("q", {}, TPU),
    "capacity": (CapacityChoices.parse("spot"), {}, TPU),
    "capacity_choice": (1, {"capacity": CapacityChoices.parse(["spot", "on-demand"])}, TPU),
    "placement": ("compact", {"num_slices": 2, "queue_name": "q"}, TPU),
    "pod_template_override": ({"metadata": {"labels": {"x": "y"}}}, {}, TPU),
    "image_pull_policy": ("Always", {}, TPU),
    "coordinator_port": (9000, {}, TPU),
    "megascale_port": (9999, {"num_slices": 2}, TPU),
    "host_network": (False, {}, TPU),
    "gpu_networking": ("none", {}, GPU),
    "gpu_networks": (tuple(f"net-{i}" for i in range(9)), {}, GPU),
    "secrets": ((SecretRef("env", "TOKEN", "s", "k"),), {}, TPU),
    "security_context": ({}, {}, TPU),
    "pathways": (Pathways(scratch_location="gs://bkt/scratch"), {}, TPU),
    "data_inputs": (FUSE, {}, TPU),
    "storage": ((Storage("claim", "/mnt/data"),), {}, TPU),
    "identity_provider": (
        "https://container.googleapis.com/v1/projects/p/locations/l/clusters/c",
        {"data_inputs": FUSE},
        TPU,
    ),
}
PATHWAYS = Pathways(scratch_location="gs://bkt/scratch")
# Fields that only steer the checks, never the JobSet (``compare=False``).
FIELDS = [f.name for f in dataclasses.fields(JaxJobSpec) if f.compare]


def test_every_field_has_a_sample():
    assert sorted(SAMPLES) == sorted(FIELDS)


@pytest.mark.parametrize("field", FIELDS)
def test_every_field_reaches_the_jobset(field):
    value, beside, accelerator = SAMPLES[field]
    base = spec(accelerator, **beside)
    assert build_jobset(dataclasses.replace(base, **{field: value})) != build_jobset(base)


@pytest.mark.parametrize("field", [f for f in FIELDS if f != "pathways"])
def test_every_field_reaches_a_pathways_jobset_or_is_refused_or_declared(field):
    """A value Pathways cannot use is refused beside it, or declared with the reason."""
    value, beside, accelerator = SAMPLES[field]
    if accelerator is not TPU:  # Pathways runs TPU slices: the spec refuses a GPU beside it
        with pytest.raises(ValueError, match="pathways= runs TPU slices"):
            spec(accelerator, **beside, pathways=PATHWAYS)
        return
    try:
        base = spec(accelerator, **beside, pathways=PATHWAYS)
        changed = dataclasses.replace(base, **{field: value})
    except ValueError as err:
        assert "pathways" in str(err), err  # refused, naming Pathways
        return
    if field in NOT_FOR_PATHWAYS:
        assert build_jobset(changed) == build_jobset(base), f"{field} is used: undeclare it"
    else:
        assert build_jobset(changed) != build_jobset(base), f"{field}: dropped under Pathways"


def test_each_field_not_for_pathways_says_why():
    assert all(len(why) > 20 for why in NOT_FOR_PATHWAYS.values())
    assert set(NOT_FOR_PATHWAYS) <= set(FIELDS)
