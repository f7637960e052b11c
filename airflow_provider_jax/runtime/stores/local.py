"""Paths on this host (or a volume mounted on it): written as a path, with no scheme. The local
backend's pods and its Airflow worker share them."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_jax.runtime.location import Location

if TYPE_CHECKING:
    from airflow_provider_jax.runtime.orbax_steps import FinalizedStep, StepRules

SCHEME = "file"
_ANY_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class LocalFolder:
    """A folder on this host."""

    scheme = SCHEME
    name = "local paths"
    form = "an absolute local path"
    shared = False
    fuse = False
    pathways_scratch = False

    def names(self, value: str) -> bool:
        """A path: no scheme (``file://`` too is refused, as every scheme no store has)."""
        return not _ANY_SCHEME.match(value)

    def parse(self, value: str, argument: str) -> Location:
        """The path (the registry refuses a relative one, as it does any host path)."""
        return Location(SCHEME, "", value)

    def host_path(self, location: Location) -> str | None:
        return location.key

    def exists(self, location: Location) -> bool:
        return os.path.exists(location.key)

    def list(self, location: Location) -> list[str]:
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

    def data_path(self, location: Location, mount: str | None) -> str:
        """The path as given (the local backend's pods share this host's files)."""
        if not os.path.exists(location.key):
            raise FileNotFoundError(f"Data({location.key!r}): no such file or folder on this host.")
        return location.key

    def newest_step(self, location: Location, rules: StepRules) -> FinalizedStep | None:
        """One ``scandir`` of the folder, then one per step newest first."""
        from airflow_provider_jax.runtime.orbax_steps import find_newest_local

        return find_newest_local(
            location.key, rules.names, rules.min_step, rules.allow_legacy_atomic_rename
        )


DRIVER = LocalFolder()
