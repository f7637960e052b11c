"""A local ``Data`` folder, on its way to GKE: uploaded once to a content-addressed place in
the bucket of ``output_dir`` (through its store's driver), where every host downloads it before
the function starts.

The place is named by a digest of the folder's files (paths, sizes and contents), so the same
folder is uploaded once across retries, mapped tasks and runs, and a changed folder gets a new
place. A marker object written last, beside the folder, says an upload finished: a try that
died mid-upload is completed by the next, and its JobSet is made only after the upload.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_jax.manifest.data_inputs import Data
from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.stores import named_store, parse_location
from airflow_provider_jax.stores import Access, Driver, store

MAX_STAGED_BYTES = 5 * 2**30  # larger data sets belong in GCS already
STAGING_PREFIX = "airflow-jax-data"
COMPLETE = ".complete"  # <digest>.complete beside the folder: not part of what pods read
UPLOAD_THREADS = 8


@dataclass(frozen=True)
class Folder:
    """A local Data set's files (relative name, path, size) and their digest."""

    root: Path
    files: tuple[tuple[str, Path, int], ...]
    digest: str

    @property
    def size(self) -> int:
        return sum(size for _, _, size in self.files)


_FOLDERS: dict[tuple[str, float], Folder] = {}  # hashed once per process and version


def folder(path: str) -> Folder:
    """The files under ``path`` (a folder, or one file) and their digest."""
    root = Path(path)
    listed = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    key = (path, max((p.stat().st_mtime for p in listed), default=0.0))
    if key in _FOLDERS:
        return _FOLDERS[key]
    files = tuple(
        (p.name if p == root else str(p.relative_to(root)), p, p.stat().st_size) for p in listed
    )
    total = sum(size for _, _, size in files)
    if total > MAX_STAGED_BYTES:
        raise ValueError(
            f"Data({path!r}) holds {total / 2**30:.1f} GiB; a local folder is uploaded for GKE "
            f"up to {MAX_STAGED_BYTES // 2**30} GiB. Put larger data sets in GCS and pass "
            "Data('gs://bucket/prefix/') (fuse=True to stream them)."
        )
    digest = hashlib.sha256()
    for name, file, size in files:
        digest.update(f"{name}\0{size}\0".encode())
        with file.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
    _FOLDERS[key] = found = Folder(root, files, digest.hexdigest()[:32])
    return found


def staging_uri(data: Data, output_dir: str | None) -> str:
    """Where ``data`` (a local folder or file) is uploaded for GKE: in output_dir's bucket."""
    target = named_store(output_dir)
    if target is None or not target.shared:
        raise ValueError(
            f"{data!r} is a local folder; on Kubernetes it is uploaded to the bucket of "
            f"output_dir, which must be gs:// (got {output_dir!r}). Give a gs:// output_dir, "
            "or pass Data('gs://bucket/prefix/')."
        )
    found = folder(str(data.path))
    single = found.files[0][0] if found.root.is_file() else ""
    bucket = parse_location(output_dir, "output_dir").root
    return str(bucket.join(STAGING_PREFIX, found.digest, single))


def upload(inputs: Sequence[Data], gcp_conn_id: str, impersonation_chain: Any, log: Any) -> None:
    """Upload each staged local input that is not already there, with progress in the log."""
    staged = [data for data in inputs if data.staged is not None]
    if not staged:
        return  # no connection needed
    access = Access(gcp_conn_id, impersonation_chain)
    for data in staged:
        bucket = parse_location(data.staged).root
        found = folder(str(data.path))
        base = bucket.join(STAGING_PREFIX, found.digest, "")
        done = bucket.join(STAGING_PREFIX, f"{found.digest}{COMPLETE}")
        driver = store(done, access)
        if driver.exists(done):
            log.info("%r is already in %s; not uploaded again.", data, base)
            continue
        _send(driver, base, found, data, log)
        driver.write(done, found.digest.encode())


def _send(driver: Driver, base: Location, found: Folder, data: Data, log: Any) -> None:
    total, done, step = found.size, 0, max(found.size // 4, 1)
    log.info(
        "Uploading %r: %d file(s), %.1f MiB, to %s",
        data, len(found.files), total / 2**20, base,
    )  # fmt: skip

    def send(item: tuple[str, Path, int]) -> int:
        name, path, size = item
        driver.upload(base.join(*name.split(os.sep)), path)
        return size

    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        for sent in pool.map(send, found.files):
            before, done = done, done + sent
            if done // step > before // step or done == total:
                log.info("Uploading %r: %.1f of %.1f MiB", data, done / 2**20, total / 2**20)
