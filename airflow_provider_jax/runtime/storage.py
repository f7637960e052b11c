"""Read and write small text files at a local path or a ``gs://`` URI, with the stdlib only.

Pods write their large results here, so this must work in any image with nothing but Python:
``gs://`` goes through the GCS JSON API with a token from the GKE metadata server (Workload
Identity). ``STORAGE_EMULATOR_HOST`` points it at an emulator instead, without credentials.
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
from typing import Any

GCS_ENDPOINT = "https://storage.googleapis.com"
_METADATA_TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
_METADATA_EMAIL_PATH = "/computeMetadata/v1/instance/service-accounts/default/email"
_RETRIES = 4
_TIMEOUT_S = 30.0


def write_text(uri: str, text: str) -> None:
    if uri.startswith("gs://"):
        bucket, name = _split(uri)
        url = (
            f"{_endpoint()}/upload/storage/v1/b/{bucket}/o"
            f"?uploadType=media&name={urllib.parse.quote(name, safe='')}"
        )
        # Not application/json: the emulator would parse a JSON body as object metadata.
        _request("POST", url, text.encode(), {"Content-Type": "text/plain; charset=utf-8"})
        return
    path = Path(uri)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text)
    partial.replace(path)  # readers never see half a file


def read_text(uri: str) -> str:
    if uri.startswith("gs://"):
        return read_object(*_split(uri)).decode()
    return Path(uri).read_text()


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


def _split(uri: str) -> tuple[str, str]:
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    if not bucket or not name:
        raise ValueError(f"{uri!r} is not a gs://bucket/object URI")
    return bucket, name


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
