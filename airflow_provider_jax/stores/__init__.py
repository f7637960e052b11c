"""The stores, as the Airflow side reads and writes them (with the task's connection),
registered in one place (:data:`DRIVERS`): the same schemes as the pods' drivers
(``runtime/stores/``), which parse every location and say what each store is.

Callers ask for the driver of a location and call it; none compares a scheme. A new store is a
driver module here that follows :class:`~airflow_provider_jax.stores.driver.Driver` (a store of
objects listed a folder at a time gets the checkpoint search from
:class:`~airflow_provider_jax.stores.listed.ListedStore`), and one entry in :data:`DRIVERS`.
"""

from __future__ import annotations

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.stores import gcs, local
from airflow_provider_jax.stores.driver import (
    DEFAULT_RETRY,
    Access,
    Driver,
    RetryPolicy,
    StorageUnavailableError,
)

__all__ = [
    "DEFAULT_RETRY",
    "DRIVERS",
    "Access",
    "Driver",
    "RetryPolicy",
    "StorageUnavailableError",
    "store",
]

# Every store, by the scheme of its locations: its driver, made for a connection.
DRIVERS: dict[str, type[Driver]] = {
    driver.scheme: driver for driver in (gcs.GcsHooks, local.LocalFiles)
}


def store(where: Location, access: Access | None = None) -> Driver:
    """The driver of ``where``'s store, calling as ``access`` (the default connection)."""
    return DRIVERS[where.scheme](access or Access())
