"""Data inputs in the pod: each ``Data(...)`` argument arrives as a marker in the call's JSON
and becomes a plain ``str`` path before the user's function is called. Stdlib only.

- a local folder (the local backend): its path, as given;
- ``gs://bucket/prefix/``: downloaded to this host's disk first, objects in parallel, with the
  size and time printed; ``STORAGE_EMULATOR_HOST`` points the download at an emulator;
- ``gs://...`` with ``fuse=True``: the GCS FUSE mount's path when the pod has the mount
  (GKE); where it has none (the local backend), downloaded as above.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from airflow_provider_jax.runtime.location import Location

MARKER = "__airflow_jax_data__"  # {MARKER: {"uri": ..., "fuse": bool, "mount": path | None}}
DOWNLOAD_THREADS = 16


def resolve(value: Any) -> Any:
    """``value`` with every Data marker replaced by its local path, at any depth."""
    if isinstance(value, dict):
        if set(value) == {MARKER}:
            return local_path(value[MARKER])
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v) for v in value]
    return value


def local_path(data: dict[str, Any]) -> str:
    uri, mount = data["uri"], data.get("mount")
    if not Location.is_gcs_uri(uri):
        if not os.path.exists(uri):
            raise FileNotFoundError(f"Data({uri!r}): no such file or folder on this host.")
        return uri
    if mount and os.path.isdir(mount):
        return mount  # the GCS FUSE mount, streamed on demand
    return download(uri, fuse=bool(mount))


def download(uri: str, fuse: bool = False) -> str:
    """Every object under ``uri`` into a folder of this host's temp dir; the folder."""
    from airflow_provider_jax.runtime import stores  # urllib: only where a download runs

    location = Location.parse(uri, "Data")
    bucket, prefix = location.bucket, location.key
    target = Path(
        tempfile.gettempdir(), "airflow-jax-data", hashlib.sha256(uri.encode()).hexdigest()[:16]
    )
    started = time.monotonic()
    folder = prefix.rstrip("/") + "/"
    try:
        objects = [
            o
            for o in stores.list_objects(bucket, prefix)
            if (o["name"] == prefix or o["name"].startswith(folder)) and not o["name"].endswith("/")
        ]
    except RuntimeError as err:
        if "HTTP 403" in str(err) or "HTTP 401" in str(err):
            raise PermissionError(
                f"Data({uri!r}): {stores.identity()} may not list gs://{bucket}; grant it "
                f"roles/storage.objectViewer on the bucket ({err})"
            ) from None
        raise RuntimeError(f"Data({uri!r}): cannot list gs://{bucket}: {err}") from None
    if not objects:
        raise FileNotFoundError(f"Data({uri!r}): no objects under it.")

    def fetch(item: dict[str, Any]) -> int:
        relative = item["name"][len(folder) :] if item["name"] != prefix else Path(prefix).name
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        return stores.save_object(bucket, item["name"], path)

    with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
        size = sum(pool.map(fetch, objects))
    took = time.monotonic() - started
    single = len(objects) == 1 and objects[0]["name"] == prefix  # a file, not a folder
    how = " (no GCS FUSE mount here: downloaded instead)" if fuse else ""
    print(
        f"airflow-jax: Data {uri}: {len(objects)} object(s), {size / 2**20:.1f} MiB downloaded "
        f"in {took:.1f} s to {target}{how}",
        flush=True,
    )
    return str(target / Path(prefix).name) if single else str(target)
