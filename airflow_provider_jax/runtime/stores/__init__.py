"""The stores a location can name, registered in one place (:data:`DRIVERS`), and the one parser
of a location string. Stdlib only: the pods use these drivers, and the Airflow side asks them
what a location is (its drivers, with the task's connection, are in
``airflow_provider_jax/stores/``, registered for the same schemes).

Callers ask for the driver of a location and call it; none compares a scheme. A new store is a
driver module here that follows :class:`Store`, and one entry in :data:`DRIVERS`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.stores import gcs, local

if TYPE_CHECKING:
    from airflow_provider_jax.runtime.orbax_steps import FinalizedStep, StepRules


class Store(Protocol):
    """What a store's driver knows and does for the pods: every call takes a parsed location.

    :ivar scheme: its locations' :attr:`Location.scheme`.
    :ivar name: its name in messages (``GCS``).
    :ivar form: how its locations are written, for messages (``gs://<bucket>/<path>``).
    :ivar shared: hosts other than this one reach it (the pods, a TensorBoard server).
    :ivar fuse: GKE's GCS FUSE CSI driver mounts it, for ``Data(..., fuse=True)``.
    :ivar pathways_scratch: Pathways' servers can share their scratch data there.
    """

    scheme: str
    name: str
    form: str
    shared: bool
    fuse: bool
    pathways_scratch: bool

    def names(self, value: str) -> bool:
        """Whether ``value`` is written as one of its locations (its scheme), unchecked."""
        ...

    def parse(self, value: str, argument: str) -> Location:
        """``value`` by its naming rules; a ValueError naming ``argument``."""
        ...

    def host_path(self, location: Location) -> str | None:
        """The path this host reads and writes it through, or None: only through the store."""
        ...

    def exists(self, location: Location) -> bool: ...

    def list(self, location: Location) -> list[str]:
        """Every file below the folder, as names relative to it."""
        ...

    def read(self, location: Location) -> bytes: ...

    def write(self, location: Location, data: bytes) -> None:
        """Write the whole object: a reader sees all of it or nothing."""
        ...

    def data_path(self, location: Location, mount: str | None) -> str:
        """The path a ``Data`` input is read from on this host: itself, its mount
        (``fuse=True``, where the pod has it) or a copy."""
        ...

    def newest_step(self, location: Location, rules: StepRules) -> FinalizedStep | None:
        """The newest finalized Orbax step in the folder, as ``runtime.orbax_steps`` rules."""
        ...


# Every store, by scheme; the order is the one messages name them in.
DRIVERS: dict[str, Store] = {driver.scheme: driver for driver in (gcs.DRIVER, local.DRIVER)}


def named_store(value: object) -> Store | None:
    """The store ``value`` is written for (by its scheme), before it is checked; None for
    anything else (a scheme no store has, or not a string)."""
    if not isinstance(value, str):
        return None
    return next((store for store in DRIVERS.values() if store.names(value)), None)


def storage_paths() -> str:
    """How a location is written, every store's way: ``gs://<bucket>/<path> or ...``."""
    forms = [store.form for store in DRIVERS.values()]
    return " or ".join(filter(None, [", ".join(forms[:-1]), forms[-1]]))


def parse_location(value: object, argument: str = "location") -> Location:
    """``value`` as a location of one of the stores, by its naming rules; else a ValueError
    naming ``argument``. A relative path would land in whatever directory the process happens
    to run in, and a scheme no store has nowhere."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{argument} must be {storage_paths()}, got {value!r}.")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        # GCS refuses CR and LF in object names; a local path with one is a pasted typo.
        raise ValueError(
            f"{argument} {value!r} holds a control character (a line feed, say): use "
            f"{storage_paths()}, without them."
        )
    store = named_store(value)
    if store is None:
        schemes = [s.name for s in DRIVERS.values() if s.shared]
        are = "is" if len(schemes) == 1 else "are"
        raise ValueError(
            f"{argument} {value!r}: only {' and '.join(schemes)} {are} supported; use "
            f"{storage_paths()}."
        )
    location = store.parse(value, argument)
    if (path := store.host_path(location)) is not None and not os.path.isabs(path):
        raise ValueError(
            f"{argument} {value!r} is relative, so it would depend on the working directory "
            f"of whatever process reads or writes it; use {storage_paths()}."
        )
    return location


def store_for(location: Location) -> Store:
    """The driver of ``location``'s store."""
    return DRIVERS[location.scheme]


def write_text(uri: str, text: str) -> None:
    location = parse_location(uri)
    store_for(location).write(location, text.encode())


def read_text(uri: str) -> str:
    location = parse_location(uri)
    return store_for(location).read(location).decode()
