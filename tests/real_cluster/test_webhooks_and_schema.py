"""What we submit passes the real JobSet and Kueue webhooks and the real CRD schema, and what
the API server would store equals what we sent, field for field, plus the defaults it adds.

Each manifest goes in with ``dryRun=All``: admission (mutating and validating webhooks),
schema validation, pruning and defaulting all run; nothing is persisted. The fields the
server added are listed in ``docs/testing.md``; a field it dropped or changed fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client, config

from airflow_provider_jax import Data, Pathways, SecretRef, Storage
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from harness.real_cluster.control_plane import ControlPlane

IMAGE = "us-docker.pkg.dev/my-project/jax/train:1"
COMMON = {"image": IMAGE, "command": ["python3", "-c", "pass"], "backend": "kubernetes"}


def tpu(task_id: str, **kwargs: Any) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id=task_id, **{"accelerator": "tpu-v5litepod-8", **COMMON, **kwargs}
    )


def gpu(task_id: str, accelerator: str, **kwargs: Any) -> JaxGpuJobOperator:
    return JaxGpuJobOperator(
        task_id=task_id, accelerator=accelerator, gpus_per_node=8, num_nodes=2, **COMMON, **kwargs
    )


CASES = {
    "tpu-v5e-2-hosts": lambda: tpu("plain"),
    "multislice-v6e": lambda: tpu("multislice", accelerator="tpu-v6e-16", num_slices=2),
    "dynamic-super-slices": lambda: tpu(
        "super", accelerator="tpu7x-4x4x8", num_slices=2, dynamic_slicing=True, queue_name="q"
    ),
    "dynamic-sub-slice": lambda: tpu(
        "sub", accelerator="tpu7x-2x2x4", dynamic_slicing=True, queue_name="q"
    ),
    "spot": lambda: tpu("spot", capacity="spot"),
    "reservation": lambda: tpu(
        "reservation", capacity="reservation:res-a", reservation_project="shared-project"
    ),
    "flex-start-compact": lambda: gpu(
        "flex",
        "h100",
        capacity="flex-start",
        queue_name="dws-queue",
        placement="compact",
        execution_timeout=timedelta(hours=6),
    ),
    "secrets": lambda: tpu(
        "secrets",
        secrets=[
            SecretRef("env", "WANDB_API_KEY", "wandb", "api-key"),
            SecretRef("volume", "/var/secrets/gcs", "gcs-key"),
        ],
    ),
    "gpudirect-tcpx": lambda: gpu("tcpx", "h100"),
    "gpudirect-tcpxo": lambda: gpu("tcpxo", "h100-mega"),
    "gpudirect-rdma": lambda: gpu("rdma", "h200"),
    "every-pod-option": lambda: tpu(
        "options",
        labels={"team": "research"},
        annotations={"example.com/owner": "ml-platform"},
        env={"RUN_KIND": "nightly"},
        node_selector={"cloud.google.com/gke-nodepool": "tpu-v5e-a"},
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
        ],
        volumes=[{"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
        volume_mounts=[{"name": "scratch", "mountPath": "/scratch"}],
        container_resources={"requests": {"memory": "16Gi", "cpu": "4"}},
        service_account_name="trainer",
        priority_class_name="high",
        ttl_seconds_after_finished=600,
        termination_grace_period=45,
        image_pull_policy="IfNotPresent",
        host_network=False,
        max_restarts=5,
        restart_on_exit_codes=[42],
        execution_timeout=timedelta(hours=2),
        pod_template_override={"spec": {"dnsPolicy": "ClusterFirst"}},
    ),
    "pathways": lambda: tpu(
        "pathways",
        accelerator="tpu-v6e-16",
        num_slices=2,
        output_dir="gs://bucket/runs/1",
        pathways=True,
        execution_timeout=timedelta(hours=2),
        service_account_name="trainer",
    ),
    "data-fuse-and-storage": lambda: tpu(
        "data",
        accelerator="tpu-v6e-16",
        entrypoint_kwargs={"d": Data("gs://bucket/imagenet/", fuse=True, file_cache="10Gi")},
        command=None,
        entrypoint="train:main",
        project_id="proj",
        location="us-central2",
        cluster_name="tpus",
        storage=[
            Storage("shared-fs", "/shared", kind="filestore"),
            Storage("ps", "/ps", kind="parallelstore"),
            Storage("weights", "/weights", kind="pd", read_only=True),
            Storage("ckpt-bucket", "/ckpt", kind="gcs"),
        ],
    ),
    "nested-values-we-accept": lambda: tpu(  # #51: each checked at parse against the schema
        "nested",
        security_context={
            "runAsUser": 1000,
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "2Gi"}}],
        volume_mounts=[{"name": "scratch", "mountPath": "/scratch", "readOnly": False}],
        pod_template_override={
            "metadata": {"labels": {"team": "research"}},
            "spec": {
                "hostIPC": True,
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                "containers": [
                    {
                        "name": "jax",
                        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                        "resources": {"limits": {"memory": "64Gi", "cpu": "7500m"}},
                        "env": [{"name": "XLA_FLAGS", "value": "--xla_dump_to=/tmp/x"}],
                    }
                ],
            },
        },
    ),
    "pathways-headless-elastic": lambda: tpu(
        "headless",
        accelerator="tpu-v5p-16",
        num_slices=4,
        pathways=Pathways("gs://bucket/scratch", headless=True, elastic_slices=2),
        queue_name="tpu-queue",
    ),
}
IGNORED = {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"}


def leaves(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    if isinstance(obj, dict) and obj:
        for key, value in obj.items():
            if not (len(path) == 1 and path[0] == "metadata" and key in IGNORED):
                yield from leaves(value, (*path, key))
    elif isinstance(obj, list) and obj:
        for index, value in enumerate(obj):
            yield from leaves(value, (*path, index))
    else:
        yield path, obj


def at(obj: Any, path: tuple) -> Any:
    for part in path:
        try:
            obj = obj[part]
        except (KeyError, IndexError, TypeError):
            return KeyError
    return obj


def pattern(path: tuple) -> str:
    return re.sub(r"\.\d+", "[*]", ".".join(map(str, path)))


@pytest.fixture(scope="module")
def custom(real_cluster: ControlPlane) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(str(real_cluster.kubeconfig())))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_server_keeps_every_field_we_send(case, custom, record_property):
    sent = CASES[case]().dry_run()
    stored = custom.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", sent, dry_run="All"
    )
    dropped = [pattern(p) for p, v in leaves(sent) if at(stored, p) is KeyError]
    changed = [
        f"{pattern(p)}: {v!r} -> {at(stored, p)!r}"
        for p, v in leaves(sent)
        if at(stored, p) is not KeyError and at(stored, p) != v
    ]
    added = sorted({pattern(p) for p, _ in leaves(stored) if at(sent, p) is KeyError})
    record_property("defaulted", added)
    print(f"\n{case}: the server added {len(added)} fields:\n  " + "\n  ".join(added))
    assert (dropped, changed) == ([], [])


def _program(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


# What tests/manifest/test_pod_schema.py refuses at parse, put into a JobSet past our checks:
# the server refuses it too (strict field validation, as kubectl asks by default).
SERVER_REFUSES = {
    "int_as_string": lambda pod: pod["containers"][0].update(securityContext={"runAsUser": "1"}),
    "bool_as_string": lambda pod: pod.update(hostIPC="false"),
    "list_as_string": lambda pod: pod["containers"][0].update(
        securityContext={"capabilities": {"drop": "ALL"}}
    ),
    "unknown_field": lambda pod: pod.update(nodeSelectr={"a": "b"}),
    "bad_quantity": lambda pod: pod["containers"][0]["resources"]["limits"].update(memory="16 GB"),
    "port_out_of_range": lambda pod: pod["containers"][0]["ports"].append({"containerPort": 2**40}),
}


@pytest.mark.parametrize("case", sorted(SERVER_REFUSES))
def test_what_we_refuse_at_parse_the_server_refuses(case, custom):
    sent = tpu("refused").dry_run()
    SERVER_REFUSES[case](_program(sent))
    with pytest.raises(client.ApiException) as refused:
        custom.create_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", sent,
            dry_run="All", field_validation="Strict",
        )  # fmt: skip
    assert refused.value.status in (400, 422), refused.value.body


# Refused at parse too, though the JobSet's schema lets them through: the pod's own
# validation refuses them only once a Job creates the pod, and the JobSet then waits with none.
POD_REFUSES = {
    "mount_of_an_undeclared_volume": lambda pod: (
        pod["containers"][0]
        .setdefault("volumeMounts", [])
        .append({"name": "nope", "mountPath": "/n"})
    ),
    "container_without_name": lambda pod: pod["containers"].append({"image": IMAGE}),
    # Kubernetes' validation beyond the types (manifest/kubernetes_syntax.py refuses each).
    "run_as_negative": lambda pod: pod["containers"][0].update(securityContext={"runAsUser": -1}),
    "privileged_without_escalation": lambda pod: pod["containers"][0].update(
        securityContext={"privileged": True, "allowPrivilegeEscalation": False}
    ),
    "volume_with_two_sources": lambda pod: pod.setdefault("volumes", []).append(
        {"name": "two", "emptyDir": {}, "hostPath": {"path": "/x"}}
    ),
}


@pytest.mark.parametrize("case", sorted(POD_REFUSES))
def test_what_passes_the_jobset_but_no_pod_could_start(case, custom, real_cluster: ControlPlane):
    sent = tpu("pod-refuses").dry_run()
    pod = _program(sent)
    POD_REFUSES[case](pod)
    custom.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", sent,
        dry_run="All", field_validation="Strict",
    )  # fmt: skip
    core = client.CoreV1Api(config.new_client_from_config(str(real_cluster.kubeconfig())))
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-refuses"}, "spec": pod}
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod("default", body, dry_run="All")
    assert refused.value.status == 422, refused.value.body


# Refused at parse (pod_template_override), though the JobSet's schema lets them through: the
# Job's own validation refuses them when the JobSet controller creates it.
JOB_REFUSES = {
    "restart_policy_always": lambda template: template["spec"].update(restartPolicy="Always"),
    "label_key_invalid": lambda template: template["metadata"]["labels"].update({"bad key!": "v"}),
}


@pytest.mark.parametrize("case", sorted(JOB_REFUSES))
def test_what_passes_the_jobset_but_no_job_could_be_made(case, custom, real_cluster: ControlPlane):
    sent = tpu("job-refuses").dry_run()
    job_spec = sent["spec"]["replicatedJobs"][0]["template"]["spec"]
    JOB_REFUSES[case](job_spec["template"])
    custom.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", sent,
        dry_run="All", field_validation="Strict",
    )  # fmt: skip
    batch = client.BatchV1Api(config.new_client_from_config(str(real_cluster.kubeconfig())))
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job-refuses"},
            "spec": job_spec}  # fmt: skip
    with pytest.raises(client.ApiException) as refused:
        batch.create_namespaced_job("default", body, dry_run="All")
    assert refused.value.status == 422, refused.value.body
