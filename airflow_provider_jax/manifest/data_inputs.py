"""``Data(...)``: a data set passed to the function as a plain ``str`` path on every host, and
the GKE GCS FUSE volume it renders with ``fuse=True``. Pure: no I/O but ``os.path`` checks.

The GCS FUSE fields are GKE's CSI ephemeral volume (``gcsfuse.csi.storage.gke.io``; the pod
annotation ``gke-gcsfuse/volumes`` and the sidecar's resource annotations, which xpk 1.16's
``core/storage.py`` sets to ``"0"``, no limit), as GKE's "Mount Cloud Storage buckets as CSI
ephemeral volumes" page and the driver's ``docs/`` describe them; ``docs/data.md`` cites both.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_jax.arguments import is_template
from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.runtime.data_paths import MARKER
from airflow_provider_jax.runtime.stores import named_store, parse_location, store_for

FUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
FUSE_ANNOTATIONS = {  # xpk's: the sidecar with no CPU, memory or ephemeral-storage limit
    "gke-gcsfuse/volumes": "true",
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
FUSE_MOUNT_ROOT = "/mnt/airflow-jax-data"


class Data:
    """A data set the function receives as a ``str`` path on each host.

    :param path: a local folder or file on the Airflow side (relative paths are relative to
        the DAG file's folder), or ``gs://bucket/prefix/``; templated.
    :param fuse: stream a ``gs://`` prefix through GKE's GCS FUSE CSI driver instead of
        downloading it before the function starts (downloaded on the local backend).
    :param read_only: mount read-only (FUSE only). A local folder is passed as it is, and a
        downloaded copy is the host's own: neither is made read-only.
    :param file_cache: GCS FUSE's file cache size on the node (e.g. ``"100Gi"``, ``"-1"`` for
        no limit); off by default (FUSE only).
    :param metadata_prefetch: list the prefix's metadata when mounting, as xpk does (FUSE).
    :param mount_options: more gcsfuse mount options (FUSE only).
    """

    template_fields: Sequence[str] = ("path",)

    def __init__(
        self,
        path: str,
        *,
        fuse: bool = False,
        read_only: bool = True,
        file_cache: str | None = None,
        metadata_prefetch: bool = True,
        mount_options: Sequence[str] = (),
    ) -> None:
        if isinstance(path, str) and _relative(path):  # next to the DAG file: Data("./x")
            caller = sys._getframe(1).f_code.co_filename
            path = os.path.abspath(os.path.join(os.path.dirname(caller), path))
        self.path = path
        self.fuse = fuse
        self.read_only = read_only
        self.file_cache = file_cache
        self.metadata_prefetch = metadata_prefetch
        if isinstance(mount_options, str):
            raise ValueError(
                f"Data mount_options must be a list of strings, got {mount_options!r}."
            )
        self.mount_options = tuple(mount_options)
        self.staged: str | None = None  # a local folder's gs:// copy, for GKE (set at run)
        self.check()

    def __repr__(self) -> str:
        return f"Data({self.path!r}{', fuse=True' if self.fuse else ''})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Data) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    @property
    def on_this_host(self) -> bool:
        """A file or folder of this machine's (no store's scheme), which the pods of a remote
        backend get a copy of (``operators/data_staging.py``)."""
        found = named_store(self.path)
        return found is not None and not found.shared

    def check(self) -> None:
        """What no backend could deliver, named by argument, before anything is created. A
        template is checked once rendered."""
        self._check_options()
        path = self.path
        if is_template(path):
            return
        if not isinstance(path, str) or not path.strip():
            raise ValueError(f"Data path must be a local path or gs://bucket/prefix, got {path!r}.")
        found = named_store(path)
        if self.fuse and not (found is not None and found.fuse):
            raise ValueError(
                f"Data({path!r}, fuse=True): GCS FUSE mounts gs:// buckets; a local folder is "
                "passed as it is. Drop fuse=True, or copy the folder to gs:// first."
            )
        where = parse_location(path, "Data")  # a store's location, no other scheme
        host_path = store_for(where).host_path(where)
        if host_path is not None and not os.path.exists(host_path):
            raise ValueError(
                f"Data({path!r}): no such file or folder on this machine (relative paths are "
                "relative to the DAG file's folder)."
            )

    def _check_options(self) -> None:
        for option in ("fuse", "read_only", "metadata_prefetch"):
            if not isinstance(value := getattr(self, option), bool):
                raise ValueError(
                    f"Data {option} must be True or False, got {type(value).__name__} {value!r}."
                )
        if self.file_cache is not None and self.file_cache != "-1":
            if not isinstance(self.file_cache, str):
                raise ValueError(
                    f"Data file_cache must be a string such as '100Gi' or '-1', got "
                    f"{type(self.file_cache).__name__} {self.file_cache!r}."
                )
            syntax.quantity("Data file_cache (or '-1' for no limit)", self.file_cache)
        if not all(isinstance(o, str) and o and "," not in o for o in self.mount_options):
            raise ValueError(
                "Data mount_options must be gcsfuse options as strings without commas (e.g. "
                f"['implicit-dirs']), got {list(self.mount_options)!r}."
            )

    @property
    def key(self) -> str:
        return hashlib.sha256(str(self.path).encode()).hexdigest()[:10]

    @property
    def volume_name(self) -> str:
        return f"gcs-fuse-{self.key}"

    @property
    def mount_path(self) -> str:
        return f"{FUSE_MOUNT_ROOT}/{self.key}"

    def marker(self) -> dict[str, Any]:
        """How the pod's runtime learns this input (``runtime/data_paths.py``)."""
        uri = self.staged or self.path
        return {MARKER: {"uri": uri, "mount": self.mount_path if self.fuse else None}}


def _relative(path: str) -> bool:
    return bool(path) and not is_template(path) and "://" not in path and not os.path.isabs(path)


def encode(value: Any, found: list[Data]) -> Any:
    """``value`` with every Data replaced by its marker (collected in ``found``), at any depth
    of the dicts, lists and tuples the function's arguments are made of."""
    if isinstance(value, Data):
        value.check()  # again once rendered: a template can render to anything
        found.append(value)
        return value.marker()
    if isinstance(value, Mapping):
        return {k: encode(v, found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v, found) for v in value]
    return value


def fuse_volume(data: Data, host_network: bool, identity_provider: str | None) -> dict[str, Any]:
    """The CSI ephemeral volume of a ``fuse=True`` input. A hostNetwork pod (multi-host TPU
    slices) must opt in to its own service account's identity (``hostNetworkPodKSA``) and,
    on GKE, name the cluster's identity provider."""
    location = parse_location(data.path, "Data")
    bucket, prefix = location.bucket, location.key
    options = ["implicit-dirs", *data.mount_options]
    if prefix.strip("/"):
        options.append(f"only-dir={prefix.strip('/')}")
    attributes = {"bucketName": bucket, "mountOptions": ",".join(options)}
    if data.metadata_prefetch:
        attributes["gcsfuseMetadataPrefetchOnMount"] = "true"
    if data.file_cache:
        attributes["fileCacheCapacity"] = data.file_cache
    if host_network:
        attributes["hostNetworkPodKSA"] = "true"
        if identity_provider:
            attributes["identityProvider"] = identity_provider
    csi = {"driver": FUSE_DRIVER, "readOnly": data.read_only, "volumeAttributes": attributes}
    return {"name": data.volume_name, "csi": csi}


def fuse_mount(data: Data) -> dict[str, Any]:
    return {"name": data.volume_name, "mountPath": data.mount_path, "readOnly": data.read_only}
