"""Read the ``result.json`` a JAX leader wrote, from GCS (through the Google connection) or a
local path, in Airflow. JSON only: a result is never unpickled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def read_result(
    uri: str,
    *,
    gcp_conn_id: str = "google_cloud_default",
    impersonation_chain: str | list[str] | tuple[str, ...] | None = None,
) -> Any:
    """The JSON value at ``uri`` (``gs://bucket/path`` or a local path / ``file://`` URI);
    FileNotFoundError if there is none."""
    parts = urlsplit(uri)
    if parts.scheme == "gs":
        from airflow.providers.google.cloud.hooks.gcs import GCSHook
        from google.api_core.exceptions import NotFound

        hook = GCSHook(gcp_conn_id=gcp_conn_id, impersonation_chain=impersonation_chain)
        try:
            data = hook.download(bucket_name=parts.netloc, object_name=parts.path.lstrip("/"))
        except NotFound as err:
            raise FileNotFoundError(uri) from err
    elif parts.scheme in ("", "file"):
        data = Path(parts.path if parts.scheme else uri).read_bytes()
    else:
        raise ValueError(f"cannot read a result from {uri!r}: use gs:// or a local path")
    try:
        return json.loads(data)
    except ValueError as err:
        raise ValueError(f"{uri} is not JSON: {err}") from None
