"""Where a task instance's files live under its ``output_dir``: one place, read by the pods'
runtime and by the Airflow side alike, so the two can never disagree on a path.

``output_dir`` is the same for every JobSet restart and every Airflow retry of a task
instance (keep ``try_number`` out of it): a retry resumes from the same checkpoints.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

GCS_SCHEME = "gs://"
STORAGE_PATHS = "gs://<bucket>/<path> or an absolute local path"
# GCS's naming rules: 3-63 characters (222 with dots, 63 per dot-separated part) of lowercase
# letters, digits, '-', '_' and '.', starting and ending with a letter or digit; no "goog"
# prefix, no "google". https://cloud.google.com/storage/docs/buckets#naming
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_ANY_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
RESULT_FILE = "result.json"  # the leader's result, when it is too big for a termination message
CHECKPOINTS = "checkpoints"  # Orbax's directory (runtime.checkpoint_dir())


def join(base: str, name: str) -> str:
    """``base/name`` for a local path or a ``gs://`` URI, with one ``/`` between them."""
    return f"{base.rstrip('/')}/{name}"


def result_uri(output_dir: str) -> str:
    """``<output_dir>/result.json``: the only place a result is ever read from."""
    return join(output_dir, RESULT_FILE)


def checkpoints_uri(output_dir: str) -> str:
    """``<output_dir>/checkpoints``: one place for a task instance's checkpoints."""
    return join(output_dir, CHECKPOINTS)


def check_storage_path(argument: str, value: object) -> str:
    """``value`` if it is ``gs://<bucket>/...`` or an absolute local path; else a ValueError
    naming ``argument``. One check for every path the provider writes or reads (``output_dir``,
    ``checkpoint_dir``), on the Airflow side and in the pods alike: a relative path would land
    in whatever directory the process happens to run in, and another scheme nowhere at all."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{argument} must be {STORAGE_PATHS}, got {value!r}.")
    if value.startswith(GCS_SCHEME):
        bucket = urlsplit(value).netloc
        parts = bucket.split(".")
        if (
            not _BUCKET.match(bucket)
            or any(not 0 < len(part) <= 63 for part in parts)
            or bucket.startswith("goog")
            or "google" in bucket
        ):
            raise ValueError(
                f"{argument} {value!r}: {bucket!r} is not a valid GCS bucket name (3-63 "
                "lowercase letters, digits, '-', '_' and '.', starting and ending with a letter "
                "or digit; see https://cloud.google.com/storage/docs/buckets#naming)."
            )
        return value
    if _ANY_SCHEME.match(value):
        raise ValueError(f"{argument} {value!r}: only GCS is supported; use {STORAGE_PATHS}.")
    if not os.path.isabs(value):
        raise ValueError(
            f"{argument} {value!r} is relative, so it would depend on the working directory of "
            f"whatever process reads or writes it; use {STORAGE_PATHS}."
        )
    return value
