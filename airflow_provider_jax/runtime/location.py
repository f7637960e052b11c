"""Where files live: a GCS bucket and object key, or an absolute local path. The one place a
location string is taken apart, shared by the pods' runtime and the Airflow side, so the two
can never read a path differently.

A new store (another scheme) adds its scheme here and a driver in :mod:`.stores`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

GCS = "gs"
LOCAL = "file"
GCS_SCHEME = f"{GCS}://"
STORAGE_PATHS = "gs://<bucket>/<path> or an absolute local path"
# GCS's naming rules: 3-63 characters (222 with dots, 63 per dot-separated part) of lowercase
# letters, digits, '-', '_' and '.', starting and ending with a letter or digit; no "goog"
# prefix, no "google". https://cloud.google.com/storage/docs/buckets#naming
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_ANY_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Location:
    """A place in a store.

    :param scheme: ``gs`` or ``file``.
    :param bucket: the GCS bucket; empty for a local path.
    :param key: the object name (or prefix) in the bucket, without a leading ``/``; for a local
        path, the absolute path itself.
    """

    scheme: str
    bucket: str
    key: str

    @classmethod
    def parse(cls, value: object, argument: str = "location") -> Location:
        """``value`` as a location: ``gs://<bucket>/...`` with a valid bucket name, or an
        absolute local path; else a ValueError naming ``argument``. A relative path would land
        in whatever directory the process happens to run in, and another scheme nowhere."""
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{argument} must be {STORAGE_PATHS}, got {value!r}.")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            # GCS refuses CR and LF in object names; a local path with one is a pasted typo.
            raise ValueError(
                f"{argument} {value!r} holds a control character (a line feed, say): use "
                f"{STORAGE_PATHS}, without them."
            )
        if value.startswith(GCS_SCHEME):
            bucket, _, key = value.removeprefix(GCS_SCHEME).partition("/")
            if not valid_bucket(bucket):
                what = f"{bucket!r}" if bucket else "it names no bucket, and ''"
                raise ValueError(
                    f"{argument} {value!r}: {what} is not a valid GCS bucket name (3-63 lowercase "
                    "letters, digits, '-', '_' and '.', starting and ending with a letter or "
                    "digit; see https://cloud.google.com/storage/docs/buckets#naming)."
                )
            return cls(GCS, bucket, key.lstrip("/"))
        if _ANY_SCHEME.match(value):
            raise ValueError(f"{argument} {value!r}: only GCS is supported; use {STORAGE_PATHS}.")
        if not os.path.isabs(value):
            raise ValueError(
                f"{argument} {value!r} is relative, so it would depend on the working directory "
                f"of whatever process reads or writes it; use {STORAGE_PATHS}."
            )
        return cls(LOCAL, "", value)

    @staticmethod
    def is_gcs_uri(value: object) -> bool:
        """Whether ``value`` names a GCS location (before it is checked)."""
        return isinstance(value, str) and value.startswith(GCS_SCHEME)

    @property
    def is_gcs(self) -> bool:
        return self.scheme == GCS

    @property
    def prefix(self) -> str:
        """The key as a folder: empty for a bucket's root, else ending in ``/``."""
        key = self.key.strip("/")
        return f"{key}/" if key else ""

    def join(self, *names: str) -> Location:
        """The location ``names`` below this one, with one ``/`` between parts."""
        key = self.key
        for name in names:
            key = f"{key.rstrip('/')}/{name}" if key else name
        return Location(self.scheme, self.bucket, key)

    @property
    def parent(self) -> Location:
        """The folder holding this location (a bucket's root is its own parent)."""
        head = self.key.rstrip("/").rpartition("/")[0]
        if self.scheme == LOCAL:
            return Location(LOCAL, "", head or "/")
        return Location(self.scheme, self.bucket, head)

    @property
    def name(self) -> str:
        """The last part of the key."""
        return self.key.rstrip("/").rpartition("/")[2]

    def __str__(self) -> str:
        if self.scheme == LOCAL:
            return self.key
        root = f"{self.scheme}://{self.bucket}"
        return f"{root}/{self.key}" if self.key else root


def valid_bucket(bucket: str) -> bool:
    """Whether ``bucket`` follows GCS's bucket naming rules."""
    return (
        bool(_BUCKET.fullmatch(bucket))
        and all(0 < len(part) <= 63 for part in bucket.split("."))
        and not bucket.startswith("goog")
        and "google" not in bucket
    )
