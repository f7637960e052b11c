"""``storage=``: file systems the cluster already has, mounted by name on every host. Pure.

Each kind renders as xpk 1.16 mounts its storages (``xpk/core/storage.py``): a volume on the
PersistentVolumeClaim, mounted at ``mount_path``, with the pod annotations GKE needs
(``gke-gcsfuse/volumes`` for Cloud Storage FUSE, ``gke-parallelstore/volumes`` for
Parallelstore). A GCS bucket is mounted without a claim, as a CSI ephemeral volume (``data_inputs.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.arguments import one_of
from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.manifest.data_inputs import FUSE_ANNOTATIONS, Data, fuse_volume

CLAIM_KINDS = ("filestore", "parallelstore", "lustre", "pd", "pvc")
KINDS = (*CLAIM_KINDS, "gcs")
ANNOTATIONS = {
    "parallelstore": {"gke-parallelstore/volumes": "true"},
    "gcs": FUSE_ANNOTATIONS,
}
LOCAL_STORAGE_ENV = "AIRFLOW_JAX_LOCAL_STORAGE"  # {"<name>": "/local/folder"} for local runs


@dataclass(frozen=True)
class Storage:
    """A claim (Filestore, Parallelstore, Managed Lustre, Persistent Disk, any PVC) or a GCS
    bucket, mounted at ``mount_path`` on every host.

    :param name: the PersistentVolumeClaim's name, or the bucket's for ``kind="gcs"``.
    :param mount_path: where the program sees it.
    :param kind: ``filestore``, ``parallelstore``, ``lustre``, ``pd``, ``pvc`` or ``gcs``.
    :param read_only: mount it read-only (required for a PD shared by several hosts).
    """

    name: str
    mount_path: str
    kind: str = "pvc"
    read_only: bool = False

    def __post_init__(self) -> None:
        one_of("storage kind", self.kind, KINDS)
        if not isinstance(self.name, str):
            raise ValueError(f"storage name must be a string, got {self.name!r}.")
        if not isinstance(self.mount_path, str) or not self.mount_path.startswith("/"):
            raise ValueError(
                f"storage mount_path must be an absolute path such as '/data', got "
                f"{self.mount_path!r}."
            )
        if self.kind == "gcs":
            syntax.dns1123_subdomain("storage name (a bucket)", self.name.replace("_", "-"))
        else:
            syntax.dns1123_subdomain("storage name (a PersistentVolumeClaim)", self.name)
        if self.read_only not in (True, False):
            raise ValueError(f"storage read_only must be True or False, got {self.read_only!r}.")

    @property
    def volume_name(self) -> str:
        return f"{self.kind}-{hashlib.sha256(self.name.encode()).hexdigest()[:10]}"

    def check_shared(self, hosts: int) -> None:
        if self.kind == "pd" and hosts > 1 and not self.read_only:
            raise ValueError(
                f"storage {self.name!r}: a Persistent Disk attaches read-write to one node, and "
                f"this job has {hosts} hosts. Mount it read_only=True, or use Filestore, "
                "Parallelstore or Lustre for a shared read-write file system."
            )

    def volume(self, host_network: bool, identity_provider: str | None) -> dict[str, Any]:
        if self.kind == "gcs":  # the bucket whole, streamed through GCS FUSE
            bucket = Data(f"gs://{self.name}/", fuse=True, read_only=self.read_only)
            volume = fuse_volume(bucket, host_network, identity_provider)
            return {**volume, "name": self.volume_name}
        claim = {"claimName": self.name, "readOnly": self.read_only}
        return {"name": self.volume_name, "persistentVolumeClaim": claim}

    def mount(self) -> dict[str, Any]:
        return {"name": self.volume_name, "mountPath": self.mount_path, "readOnly": self.read_only}


def storage_annotations(storage: tuple[Storage, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in storage:
        out |= ANNOTATIONS.get(item.kind, {})
    return out
