"""Data(...) in the manifest: a fuse=True input is GKE's GCS FUSE CSI ephemeral volume on the
program's container, with what hostNetwork pods need; and the inputs no backend could deliver,
refused at parse with the argument named."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_provider_jax import Data
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
FUSE = Data("gs://bkt/imagenet/train/", fuse=True, file_cache="100Gi")


def program_pod(manifest: dict[str, Any], rjob: int = 0) -> dict[str, Any]:
    return manifest["spec"]["replicatedJobs"][rjob]["template"]["spec"]["template"]


def test_fuse_renders_gkes_csi_volume_on_a_host_network_slice():
    op = JaxTpuSliceOperator(
        **TPU,
        entrypoint_kwargs={"train": FUSE, "eval": Data("gs://bkt/eval/")},
        backend="kubernetes",
        project_id="proj",
        location="us-central2",
        cluster_name="tpus",
    )
    pod = program_pod(op.dry_run())
    assert pod["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    assert pod["metadata"]["annotations"]["gke-gcsfuse/memory-limit"] == "0"
    (volume,) = [v for v in pod["spec"]["volumes"] if "csi" in v]  # eval is downloaded
    assert volume["csi"] == {
        "driver": "gcsfuse.csi.storage.gke.io",
        "readOnly": True,
        "volumeAttributes": {
            "bucketName": "bkt",
            "mountOptions": "implicit-dirs,only-dir=imagenet/train",
            "gcsfuseMetadataPrefetchOnMount": "true",
            "fileCacheCapacity": "100Gi",
            "hostNetworkPodKSA": "true",
            "identityProvider": "https://container.googleapis.com/v1/projects/proj/locations/"
            "us-central2/clusters/tpus",
        },
    }
    (mount,) = pod["spec"]["containers"][0]["volumeMounts"]
    assert mount == {"name": volume["name"], "mountPath": FUSE.mount_path, "readOnly": True}


def test_a_gpu_pod_on_its_own_network_needs_no_host_network_opt_in():
    op = JaxGpuJobOperator(
        **TPU | {"accelerator": "h100-80gb-8", "num_nodes": 2, "entrypoint_kwargs": {"d": FUSE}}
    )
    (volume,) = [v for v in program_pod(op.dry_run())["spec"]["volumes"] if "csi" in v]
    assert "hostNetworkPodKSA" not in volume["csi"]["volumeAttributes"]


def test_under_pathways_the_head_mounts_it():
    op = JaxTpuSliceOperator(
        **TPU | {"output_dir": "gs://bkt/out", "entrypoint_kwargs": {"d": FUSE}},
        pathways=True,
    )
    manifest = op.dry_run()
    head, worker = program_pod(manifest, 0), program_pod(manifest, 1)
    assert any("csi" in v for v in head["spec"]["volumes"])
    assert not any("csi" in v for v in worker["spec"]["volumes"])


BAD: list[tuple[str, Any, str]] = [
    ("missing_folder", lambda: Data("/no/such/dataset"), "no such file or folder"),
    ("no_bucket", lambda: Data("gs:///prefix/"), "names no bucket"),
    ("bad_bucket", lambda: Data("gs://My_Bucket/x/"), "not a valid GCS bucket"),
    ("other_scheme", lambda: Data("s3://bucket/x/"), "only GCS is supported"),
    ("fuse_local", lambda: Data("/tmp", fuse=True), "GCS FUSE mounts gs:// buckets"),
    ("mount_options_str", lambda: Data("gs://bkt/x/", mount_options="ro"), "list of strings"),
]


@pytest.mark.parametrize(("make", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_data_set_no_backend_could_deliver_is_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


MOUNTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "two_on_one_path",
        {
            "volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
            "volume_mounts": [
                {"name": "a", "mountPath": "/data"},
                {"name": "b", "mountPath": "/data/"},
            ],
        },
        "'a' and 'b' are both mounted at '/data'",
    ),
    (
        "over_etc",
        {
            "volumes": [{"name": "a", "emptyDir": {}}],
            "volume_mounts": [{"name": "a", "mountPath": "/etc"}],
        },
        "would hide the system folder '/etc'",
    ),
    (
        "volume_name",
        {"volumes": [{"name": "My_Data", "emptyDir": {}}]},
        "volumes name must be a DNS",
    ),
    ("relative_mount", {"volume_mounts": [{"name": "a", "mountPath": "data"}]}, "absolute path"),
]


@pytest.mark.parametrize(("kwargs", "message"), [c[1:] for c in MOUNTS], ids=[c[0] for c in MOUNTS])
def test_mounts_that_cannot_work_are_refused_at_parse(kwargs, message):
    with DAG("bad", schedule=None), pytest.raises(ValueError, match=message):
        JaxTpuSliceOperator(**TPU | kwargs)


def test_a_local_folder_for_kubernetes_needs_a_gcs_output_dir_once_the_task_runs():
    """At run, not at parse: the same DAG file runs on the local backend elsewhere."""
    op = JaxTpuSliceOperator(**TPU, entrypoint_kwargs={"d": Data("/tmp")}, backend="kubernetes")
    with pytest.raises(ValueError, match=r"Data\('/tmp'\) is a local folder; on Kubernetes it is"):
        op.build_spec(name="x")


def test_the_decorator_takes_data_and_templates_render_in_it():
    with DAG("data", schedule=None):

        @task.jax_tpu(accelerator="v6e-16", image="img", backend="kubernetes")
        def train(d: str) -> None: ...

        op = train(Data("gs://bkt/{{ ds }}/", fuse=True)).operator
    op.render_template_fields({"ds": "2026-11-26"})
    (data,) = op.op_args
    assert data.path == "gs://bkt/2026-11-26/"
    volume = next(v for v in program_pod(op.dry_run())["spec"]["volumes"] if "csi" in v)
    assert volume["csi"]["volumeAttributes"]["mountOptions"].endswith("only-dir=2026-11-26")
