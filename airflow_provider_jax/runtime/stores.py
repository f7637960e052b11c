"""The stores behind a :class:`~airflow_provider_jax.runtime.location.Location`, with the stdlib
only: one small driver interface (:class:`Store`) and its two drivers, a local folder and GCS.

Pods write their large results here, so this must work in any image with nothing but Python:
``gs://`` goes through the GCS JSON API with a token from the GKE metadata server (Workload
Identity). ``STORAGE_EMULATOR_HOST`` points it at an emulator instead, without credentials.
The Airflow side reads GCS through the google provider's hooks instead, with the task's
connection (``backends/result.py``, ``checkpoints/gcs_drivers.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from airflow_provider_jax.runtime.location import GCS, Location

GCS_ENDPOINT = "https://storage.googleapis.com"
_METADATA_TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
_METADATA_EMAIL_PATH = "/computeMetadata/v1/instance/service-accounts/default/email"
_RETRIES = 4
_TIMEOUT_S = 30.0


class Store(Protocol):
    """What a store does for the runtime: every call takes a parsed :class:`Location`."""

    def exists(self, location: Location) -> bool: ...

    def list(self, location: Location) -> list[str]: ...

    def read(self, location: Location) -> bytes: ...

    def write(self, location: Location, data: bytes) -> None: ...


class LocalFolder:
    """A folder on this host (or a volume mounted on it)."""

    def exists(self, location: Location) -> bool:
        return os.path.exists(location.key)

    def list(self, location: Location) -> list[str]:
        """Every file below the folder, as paths relative to it."""
        root = Path(location.key)
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    def read(self, location: Location) -> bytes:
        return Path(location.key).read_bytes()

    def write(self, location: Location, data: bytes) -> None:
        path = Path(location.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(path)  # readers never see half a file


class GcsJsonApi:
    """GCS through its JSON API, with the pod's Workload Identity (or the emulator)."""

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


def store_for(location: Location) -> Store:
    """The driver of ``location``'s scheme."""
    return GcsJsonApi() if location.scheme == GCS else LocalFolder()


def write_text(uri: str, text: str) -> None:
    location = Location.parse(uri)
    store_for(location).write(location, text.encode())


def read_text(uri: str) -> str:
    location = Location.parse(uri)
    return store_for(location).read(location).decode()


def read_object(bucket: str, name: str) -> bytes:
    url = f"{_endpoint()}/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}?alt=media"
    return _request("GET", url)


def save_object(bucket: str, name: str, path: Path) -> int:
    """Stream one object to ``path`` (written whole or not at all), retried as every call
    is; its size. Data shards can be gigabytes: they never sit in memory."""
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
    from airflow_provider_jax.runtime.orbax_steps import LIST_FIELDS

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
    host = os.environ.get("GCE_METADATA_HOST", "metadata.google.internal")
    request = urllib.request.Request(
        f"http://{host}{_METADATA_EMAIL_PATH}", headers={"Metadata-Flavor": "Google"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read().decode()
    except OSError:
        return "this pod's service account (Workload Identity)"


def _token() -> str | None:
    if _emulator():
        return None
    host = os.environ.get("GCE_METADATA_HOST", "metadata.google.internal")
    request = urllib.request.Request(
        f"http://{host}{_METADATA_TOKEN_PATH}", headers={"Metadata-Flavor": "Google"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)["access_token"]
    except (OSError, KeyError, ValueError) as err:
        raise RuntimeError(
            "cannot get a GCS token from the metadata server (Workload Identity): "
            f"{err}. Outside GKE, use a local output_dir or set STORAGE_EMULATOR_HOST."
        ) from None


def _request(
    method: str,
    url: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    read: Callable[[Any], Any] = lambda response: response.read(),
) -> Any:
    """One call, retried with backoff on 429, 5xx and connection errors; ``read`` takes the
    response (its whole body, by default)."""
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
