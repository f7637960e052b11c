"""storage=: claims and buckets by name, on every host, as xpk mounts its storages; and what
cannot work (a PD shared read-write, a bad name or kind), refused at parse."""

from __future__ import annotations

import pytest
from airflow.sdk import DAG

from airflow_provider_jax import Storage
from airflow_provider_jax.operators import JaxTpuSliceOperator

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}


def test_each_kind_renders_its_volume_mount_and_annotations():
    op = JaxTpuSliceOperator(
        **TPU,
        storage=[
            Storage("shared-fs", "/shared", kind="filestore"),
            Storage("ps-claim", "/ps", kind="parallelstore"),
            Storage("weights", "/weights", kind="pd", read_only=True),
            Storage("my-bucket", "/ckpt", kind="gcs"),
        ],
    )
    template = op.dry_run()["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in template["spec"]["containers"][0]["volumeMounts"]}
    assert volumes[mounts["/shared"]["name"]]["persistentVolumeClaim"] == {
        "claimName": "shared-fs",
        "readOnly": False,
    }
    assert mounts["/weights"]["readOnly"] is True
    bucket = volumes[mounts["/ckpt"]["name"]]["csi"]
    assert bucket["driver"] == "gcsfuse.csi.storage.gke.io"
    assert bucket["volumeAttributes"]["bucketName"] == "my-bucket"
    assert bucket["volumeAttributes"]["hostNetworkPodKSA"] == "true"  # a multi-host TPU slice
    annotations = template["metadata"]["annotations"]
    assert annotations["gke-parallelstore/volumes"] == annotations["gke-gcsfuse/volumes"] == "true"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Storage("weights", "/w", kind="pd"), "attaches read-write to one node"),
        (lambda: Storage("fs", "/etc", kind="filestore"), "would hide the system folder"),
        (lambda: Storage("Bad_Claim", "/d"), "storage name .* must be a DNS-1123"),
        (lambda: Storage("fs", "/d", kind="nfs"), "storage kind must be one of"),
        (lambda: Storage("fs", "/d", read_only="yes"), "read_only must be True or False"),
    ],
    ids=["pd_shared_read_write", "system_folder", "claim_name", "kind", "read_only"],
)
def test_what_cannot_mount_is_refused_at_parse(make, message):
    with DAG("bad", schedule=None), pytest.raises(ValueError, match=message):
        JaxTpuSliceOperator(**TPU, storage=[make()])
