"""Where files live: a store's scheme, the bucket in it and the key in the bucket. The pods'
runtime and the Airflow side share it, so the two can never read a path differently.

A location knows no store: a string becomes one only through :func:`.stores.parse_location`,
where each store's driver applies its own naming rules, and each operation on one goes to its
scheme's driver (:mod:`.stores`, and ``airflow_provider_jax/stores/`` on the Airflow side).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place in a store.

    :param scheme: the store's scheme (``gs``; ``file`` for a path on this host).
    :param bucket: the bucket; empty for a path on this host, whose whole is the key.
    :param key: the object name (or prefix) in the bucket, without a leading ``/``; for a
        path on this host, the absolute path itself.
    """

    scheme: str
    bucket: str
    key: str

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
        """The folder holding this location (a bucket's root, or ``/``, is its own parent)."""
        head = self.key.rstrip("/").rpartition("/")[0]
        return Location(self.scheme, self.bucket, head if self.bucket else head or "/")

    @property
    def name(self) -> str:
        """The last part of the key."""
        return self.key.rstrip("/").rpartition("/")[2]

    @property
    def root(self) -> Location:
        """The bucket's root (for a path on this host, ``/``)."""
        return Location(self.scheme, self.bucket, "" if self.bucket else "/")

    def __str__(self) -> str:
        if not self.bucket:  # a path on this host is written as itself
            return self.key
        root = f"{self.scheme}://{self.bucket}"
        return f"{root}/{self.key}" if self.key else root
