"""GCS for the pods, with the stdlib only: its naming rules, and its objects through the JSON API
with a token from the GKE metadata server (Workload Identity). ``STORAGE_EMULATOR_HOST``
points it at an emulator instead, without credentials.

Pods write their large results here, so this must work in any image with nothing but Python.
The Airflow side reads GCS through the google provider's hooks instead, with the task's
connection (``airflow_provider_jax/stores/gcs.py``). What only a request or a download needs
(``urllib.request``, threads) is imported there: importing the runtime stays light.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_jax.runtime.location import Location

if TYPE_CHECKING:
    from airflow_provider_jax.runtime.orbax_steps import FinalizedStep, ListPage, StepRules

SCHEME = "gs"
GCS_ENDPOINT = "https://storage.googleapis.com"
# Only what the checkpoint search reads from an ``objects.list`` reply: keeps a 1,000-entry
# page small (here, and for the Airflow side's hooks).
LIST_FIELDS = "items(name,updated),prefixes,nextPageToken"
DOWNLOAD_THREADS = 16
_METADATA_TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
_METADATA_EMAIL_PATH = "/computeMetadata/v1/instance/service-accounts/default/email"
_RETRIES = 4
_TIMEOUT_S = 30.0
# GCS's naming rules: 3-63 characters (222 with dots, 63 per dot-separated part) of lowercase
# letters, digits, '-', '_' and '.', starting and ending with a letter or digit; no "goog"
# prefix, no "google". https://cloud.google.com/storage/docs/buckets#naming
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


class GcsJsonApi:
    """GCS through its JSON API, with the pod's Workload Identity (or the emulator)."""

    scheme = SCHEME
    name = "GCS"
    form = f"{SCHEME}://<bucket>/<path>"
    shared = True
    fuse = True  # GKE's GCS FUSE CSI driver
    pathways_scratch = True  # Pathways' --gcs_scratch_location

    def names(self, value: str) -> bool:
        return value.startswith(f"{SCHEME}://")

    def parse(self, value: str, argument: str) -> Location:
        """``gs://<bucket>/...`` with a valid bucket name."""
        bucket, _, key = value.removeprefix(f"{SCHEME}://").partition("/")
        if not valid_bucket(bucket):
            what = f"{bucket!r}" if bucket else "it names no bucket, and ''"
            raise ValueError(
                f"{argument} {value!r}: {what} is not a valid GCS bucket name (3-63 lowercase "
                "letters, digits, '-', '_' and '.', starting and ending with a letter or "
                "digit; see https://cloud.google.com/storage/docs/buckets#naming)."
            )
        return Location(SCHEME, bucket, key.lstrip("/"))

    def host_path(self, location: Location) -> str | None:
        return None

    def exists(self, location: Location) -> bool:
        """An object of that name, or any object below it as a folder: one list request."""
        key = location.key.rstrip("/")
        page = list_page(location.bucket, key)
        return any(o["name"] == key for o in page.get("items", [])) or (
            f"{key}/" in page.get("prefixes", []) or not key
        )

    def list(self, location: Location) -> list[str]:
        """Every object below the prefix, as names relative to it."""
        prefix = location.prefix
        return [o["name"][len(prefix) :] for o in list_objects(location.bucket, prefix)]

    def read(self, location: Location) -> bytes:
        return read_object(location.bucket, _object_name(location))

    def write(self, location: Location, data: bytes) -> None:
        url = (
            f"{_endpoint()}/upload/storage/v1/b/{location.bucket}/o"
            f"?uploadType=media&name={urllib.parse.quote(_object_name(location), safe='')}"
        )
        # Not application/json: the emulator would parse a JSON body as object metadata.
        _request("POST", url, data, {"Content-Type": "text/plain; charset=utf-8"})

    def data_path(self, location: Location, mount: str | None) -> str:
        """The GCS FUSE mount where the pod has it (GKE), streamed on demand; else every
        object downloaded to this host first (the local backend has no mount)."""
        if mount and os.path.isdir(mount):
            return mount
        return download(location, fuse=bool(mount))

    def newest_step(self, location: Location, rules: StepRules) -> FinalizedStep | None:
        """One listing of the folder, then one per step newest first (never per file)."""
        from airflow_provider_jax.runtime import orbax_steps

        def fetch(request: orbax_steps.ListRequest) -> orbax_steps.ListPage:
            return page_of(list_page(location.bucket, request.prefix, request.page_token))

        return orbax_steps.run_search(orbax_steps.search(location, rules), fetch)


DRIVER = GcsJsonApi()


def valid_bucket(bucket: str) -> bool:
    """Whether ``bucket`` follows GCS's bucket naming rules."""
    return (
        bool(_BUCKET.fullmatch(bucket))
        and all(0 < len(part) <= 63 for part in bucket.split("."))
        and not bucket.startswith("goog")
        and "google" not in bucket
    )


def page_of(data: dict[str, Any]) -> ListPage:
    """A search's page from an ``objects.list`` JSON reply."""
    from airflow_provider_jax.runtime.orbax_steps import ListedObject, ListPage, parse_rfc3339

    objects = tuple(
        ListedObject(item["name"], parse_rfc3339(item.get("updated")))
        for item in data.get("items") or ()
    )
    return ListPage(objects, tuple(data.get("prefixes") or ()), data.get("nextPageToken") or None)


def download(location: Location, fuse: bool = False) -> str:
    """Every object under ``location`` into a folder of this host's temp dir, objects in
    parallel, with the size and time printed; the folder (or the file, for one object)."""
    import hashlib
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    uri, bucket, prefix = str(location), location.bucket, location.key
    target = Path(
        tempfile.gettempdir(), "airflow-jax-data", hashlib.sha256(uri.encode()).hexdigest()[:16]
    )
    started = time.monotonic()
    folder = prefix.rstrip("/") + "/"
    try:
        objects = [
            o
            for o in list_objects(bucket, prefix)
            if (o["name"] == prefix or o["name"].startswith(folder)) and not o["name"].endswith("/")
        ]
    except RuntimeError as err:
        if "HTTP 403" in str(err) or "HTTP 401" in str(err):
            raise PermissionError(
                f"Data({uri!r}): {identity()} may not list gs://{bucket}; grant it "
                f"roles/storage.objectViewer on the bucket ({err})"
            ) from None
        raise RuntimeError(f"Data({uri!r}): cannot list gs://{bucket}: {err}") from None
    if not objects:
        raise FileNotFoundError(f"Data({uri!r}): no objects under it.")

    def fetch(item: dict[str, Any]) -> int:
        relative = item["name"][len(folder) :] if item["name"] != prefix else Path(prefix).name
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        return save_object(bucket, item["name"], path)

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


def read_object(bucket: str, name: str) -> bytes:
    url = f"{_endpoint()}/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}?alt=media"
    return _request("GET", url)


def save_object(bucket: str, name: str, path: Path) -> int:
    """Stream one object to ``path`` (written whole or not at all), retried as every call
    is; its size. Data shards can be gigabytes: they never sit in memory."""
    import shutil

    url = f"{_endpoint()}/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}?alt=media"
    partial = path.with_name(f".{path.name}.partial")

    def to_file(response: Any) -> int:
        with partial.open("wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
        partial.replace(path)
        return path.stat().st_size

    return _request("GET", url, read=to_file)


def list_objects(bucket: str, prefix: str) -> list[dict]:
    """Every object under ``prefix``, every page (``name`` and ``size`` of each)."""
    items: list[dict] = []
    token = None
    while True:
        query = {"prefix": prefix, "fields": "items(name,size),nextPageToken"}
        if token:
            query["pageToken"] = token
        url = f"{_endpoint()}/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(query)}"
        page = json.loads(_request("GET", url))
        items += page.get("items", [])
        if not (token := page.get("nextPageToken")):
            return items


def list_page(bucket: str, prefix: str, page_token: str | None = None) -> dict:
    """One ``objects.list`` page under ``prefix`` with ``delimiter=/`` (the JSON API's reply)."""
    query = {"prefix": prefix, "delimiter": "/", "fields": LIST_FIELDS}
    if page_token:
        query["pageToken"] = page_token
    url = f"{_endpoint()}/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(query)}"
    return json.loads(_request("GET", url))


def _object_name(location: Location) -> str:
    if not location.key:
        raise ValueError(f"{location} is not a gs://bucket/object URI")
    return location.key


def _emulator() -> str | None:
    host = os.environ.get("STORAGE_EMULATOR_HOST")
    if host and "://" not in host:
        host = f"http://{host}"
    return host.rstrip("/") if host else None


def _endpoint() -> str:
    return _emulator() or GCS_ENDPOINT


def identity() -> str:
    """Who this pod's GCS calls run as: its Workload Identity's email, when it can be read."""
    if _emulator():
        return "the emulator's anonymous user"
    try:
        return _from_metadata(_METADATA_EMAIL_PATH).decode()
    except OSError:
        return "this pod's service account (Workload Identity)"


def _token() -> str | None:
    if _emulator():
        return None
    try:
        return json.loads(_from_metadata(_METADATA_TOKEN_PATH))["access_token"]
    except (OSError, KeyError, ValueError) as err:
        raise RuntimeError(
            "cannot get a GCS token from the metadata server (Workload Identity): "
            f"{err}. Outside GKE, use a local output_dir or set STORAGE_EMULATOR_HOST."
        ) from None


def _from_metadata(path: str) -> bytes:
    """The GKE metadata server's answer at ``path``."""
    import urllib.request

    host = os.environ.get("GCE_METADATA_HOST", "metadata.google.internal")
    request = urllib.request.Request(f"http://{host}{path}", headers={"Metadata-Flavor": "Google"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.read()


def _request(
    method: str,
    url: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    read: Callable[[Any], Any] = lambda response: response.read(),
) -> Any:
    """One call, retried with backoff on 429, 5xx and connection errors; ``read`` takes the
    response (its whole body, by default)."""
    import urllib.error
    import urllib.request

    headers = dict(headers or {})
    if token := _token():
        headers["Authorization"] = f"Bearer {token}"
    for attempt in range(_RETRIES):
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
                return read(response)
        except urllib.error.HTTPError as err:
            if (err.code != 429 and err.code < 500) or attempt == _RETRIES - 1:
                detail = err.read().decode(errors="replace")[:500]
                raise RuntimeError(f"{method} {url} failed: HTTP {err.code} {detail}") from None
        except OSError as err:  # URLError, timeouts, resets
            if attempt == _RETRIES - 1:
                raise RuntimeError(f"{method} {url} failed: {err}") from None
        time.sleep(0.5 * 2**attempt)
    raise AssertionError("unreachable")
