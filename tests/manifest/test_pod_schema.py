"""#51's nested values: what a pod would refuse is refused at parse, with the argument and the
path inside it named; what Kubernetes takes is taken. The server's own verdict on the same
values is in ``tests/real_cluster/test_webhooks_and_schema.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_provider_jax import Data, Pathways, Storage
from airflow_provider_jax.manifest import pod_schema
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from tests.support.jobset_schema import schema_path
from tools.pod_schema import generate

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "command": ["python3"]}
GPU = {**TPU, "accelerator": "h100", "num_nodes": 2, "gpus_per_node": 8}
JAX = {"name": "jax"}  # the program's container, as an override names it


def tpu(**kwargs: Any) -> Callable[[], Any]:
    return lambda: JaxTpuSliceOperator(**(TPU | kwargs))


def override(**spec: Any) -> Callable[[], Any]:
    return tpu(pod_template_override={"spec": spec})


REFUSED = {
    # pod_template_override's contents
    "override_type": (
        override(containers=[{**JAX, "resources": {"limits": {"memory": [16]}}}]),
        r"pod_template_override.spec.containers\[0\].resources.limits.memory must be an "
        r"integer or a string, got list",
    ),
    "override_quantity": (
        override(containers=[{**JAX, "resources": {"limits": {"memory": "16 GB"}}}]),
        r"limits.memory must be a Kubernetes quantity such as .* got '16 GB'",
    ),
    "override_unknown_field": (
        override(nodeSelectr={"a": "b"}),
        r"pod_template_override.spec has no field 'nodeSelectr' .*did you mean 'nodeSelector'",
    ),
    "override_container_without_name": (
        override(containers=[{"env": [{"name": "A", "value": "1"}]}]),
        r"pod_template_override.spec.containers\[0\] needs 'name'",
    ),
    "override_env_value_int": (
        override(containers=[{**JAX, "env": [{"name": "A", "value": 1}]}]),
        r"containers\[0\].env\[0\].value must be a string, got int 1",
    ),
    "override_port_range": (
        override(containers=[{**JAX, "ports": [{"containerPort": 2**40}]}]),
        r"containerPort must be an integer from",
    ),
    "override_bool_string": (
        override(hostIPC="false"),
        r"pod_template_override.spec.hostIPC must be True or False, got str 'false'",
    ),
    "override_mount_undeclared": (
        override(containers=[{**JAX, "volumeMounts": [{"name": "nope", "mountPath": "/n"}]}]),
        r"pod_template_override: container 'jax' mounts the volume 'nope', which the pod "
        r"does not declare",
    ),
    # security_context
    "security_context_int_as_string": (
        tpu(security_context={"runAsUser": "1000"}),
        r"security_context.runAsUser must be an integer, got str '1000'",
    ),
    "security_context_bool_as_string": (
        tpu(security_context={"privileged": "true"}),
        r"security_context.privileged must be True or False, got str 'true'",
    ),
    "security_context_list_as_string": (
        tpu(security_context={"capabilities": {"drop": "ALL"}}),
        r"security_context.capabilities.drop must be a list, got str 'ALL'",
    ),
    "security_context_misspelt": (
        tpu(security_context={"runAsNonRot": True}),
        r"security_context has no field 'runAsNonRot'.*'runAsNonRoot'",
    ),
    # volumes, mounts, tolerations
    "volume_quantity": (
        tpu(
            volumes=[{"name": "s", "emptyDir": {"sizeLimit": "lots"}}],
            volume_mounts=[{"name": "s", "mountPath": "/s"}],
        ),
        r"volumes\[0\].emptyDir.sizeLimit must be a Kubernetes quantity",
    ),
    "mount_undeclared": (
        tpu(volume_mounts=[{"name": "nope", "mountPath": "/n"}]),
        r"volume_mounts names the volume 'nope', which is not declared",
    ),
    "mount_read_only_string": (
        tpu(
            volumes=[{"name": "s", "emptyDir": {}}],
            volume_mounts=[{"name": "s", "mountPath": "/s", "readOnly": "yes"}],
        ),
        r"volume_mounts\[0\].readOnly must be True or False, got str 'yes'",
    ),
    # Pathways' selector
    "pathways_selector_value": (
        lambda: Pathways(head_node_selector={"cloud.google.com/gke-nodepool": "cpu np"}),
        r"pathways head_node_selector\['cloud.google.com/gke-nodepool'\] value 'cpu np'",
    ),
    "pathways_selector_not_mapping": (
        lambda: Pathways(head_node_selector="cpu-np"),
        r"pathways head_node_selector must be a mapping",
    ),
    # Data and Storage options
    "data_file_cache": (
        lambda: Data("gs://bkt/d/", fuse=True, file_cache="100 GB"),
        r"Data file_cache .* must be a non-negative Kubernetes quantity",
    ),
    "data_file_cache_int": (
        lambda: Data("gs://bkt/d/", fuse=True, file_cache=100),
        r"Data file_cache must be a string such as '100Gi' or '-1', got int 100",
    ),
    "data_prefetch_string": (
        lambda: Data("gs://bkt/d/", fuse=True, metadata_prefetch="false"),
        r"Data metadata_prefetch must be True or False, got str 'false'",
    ),
    "data_fuse_string_templated_path": (
        lambda: Data("{{ params.data }}", fuse="yes"),
        r"Data fuse must be True or False, got str 'yes'",
    ),
    "data_mount_option": (
        lambda: Data("gs://bkt/d/", fuse=True, mount_options=["implicit-dirs,uid=0"]),
        r"Data mount_options must be gcsfuse options as strings without commas",
    ),
    "storage_mount_path": (
        lambda: Storage("fs", "data", kind="filestore"),
        r"storage mount_path must be an absolute path such as '/data', got 'data'",
    ),
    # boolean options
    "retry_on_code_error_string": (
        tpu(retry_on_code_error="false"),
        r"retry_on_code_error must be True, False or None, got str 'false'",
    ),
    "initialize_distributed_string": (
        tpu(initialize_distributed="no"),
        r"initialize_distributed must be True, False or None, got str 'no'",
    ),
    "deferrable_string": (tpu(deferrable="true"), r"deferrable must be True, False or None"),
    "sensor_deferrable_string": (
        lambda: OrbaxCheckpointSensor(task_id="s", checkpoint_dir="gs://bkt/c", deferrable=1),
        r"deferrable must be True or False, got int 1",
    ),
}

ACCEPTED = {
    "override_merges_into_ours": override(
        nodeSelector={"pool": "a"},
        containers=[{**JAX, "resources": {"limits": {"memory": "16Gi", "cpu": 4}}}],
    ),
    "override_declares_what_it_mounts": override(
        volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        containers=[{**JAX, "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}],
    ),
    "mount_of_a_volume_the_override_declares": tpu(
        pod_template_override={"spec": {"volumes": [{"name": "s", "emptyDir": {}}]}},
        volume_mounts=[{"name": "s", "mountPath": "/s"}],
    ),
    "security_context": tpu(
        security_context={
            "runAsUser": 1000,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        }
    ),
    "gpu_job": lambda: JaxGpuJobOperator(**GPU, pod_template_override={"spec": {"hostIPC": True}}),
    "data_no_cache_limit": lambda: Data("gs://bkt/d/", fuse=True, file_cache="-1"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_at_parse_with_the_path_named(case):
    build, message = REFUSED[case]
    with DAG("nested", schedule=None), pytest.raises((ValueError, TypeError), match=message):
        build()


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_what_kubernetes_takes_is_taken(case):
    with DAG("nested", schedule=None):
        ACCEPTED[case]()


def test_a_partial_override_needs_no_field_that_the_generated_pod_has():
    pod_schema.check("o", {"spec": {"hostIPC": True}}, pod_schema.POD_TEMPLATE, partial=True)
    with pytest.raises(ValueError, match=r"o.spec needs 'containers'"):
        pod_schema.check("o", {"spec": {"hostIPC": True}}, pod_schema.POD_TEMPLATE)


def test_the_shipped_schema_is_the_crds():
    assert generate.main([str(schema_path()), "--check"]) == 0
