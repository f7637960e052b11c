"""What a store's driver does for the Airflow side (:class:`Driver`), and what its calls take
and raise: who the calls run as (:class:`Access`), how a listing is retried, and the error
that says "not now"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import FinalizedStep, StepNames, StepRules


@dataclass(frozen=True)
class Access:
    """Who the calls run as: the task's connection (``gcp_conn_id``) and the service
    accounts it impersonates."""

    conn_id: str = "google_cloud_default"
    impersonation_chain: str | Sequence[str] | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How often one list call is tried on 429/5xx/connection errors within one check, and
    how long to wait between tries (exponential, with jitter)."""

    attempts: int = 5
    initial_delay: float = 0.5
    max_delay: float = 8.0


DEFAULT_RETRY = RetryPolicy()


class StorageUnavailableError(Exception):
    """Storage kept failing with retryable errors; the next poke may succeed."""


StepCheck = Callable[[int, str], Awaitable[FinalizedStep | None]]
# One poll of a checkpoint folder: its step folders, ascending, and how to check one of them.
StepPoll = Callable[[], Awaitable[tuple[StepNames, StepCheck]]]


class Driver(Protocol):
    """A store, as the Airflow side reads and writes it: made with an :class:`Access`, every
    call takes a parsed location (``runtime.stores.parse_location``)."""

    scheme: str  # its locations' Location.scheme, as the pods' driver of the store names it

    def __init__(self, access: Access) -> None: ...

    # The checkpoint search (``runtime.orbax_steps`` decides what is finalized): the sensor's
    # (sync), the triggers' (async), and the event trigger's polls, one listing each.

    def find_newest(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> FinalizedStep | None:
        """The newest finalized step; None while there is none (or no folder yet)."""
        ...

    async def afind_newest(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> FinalizedStep | None: ...

    def folders(self, where: Location, retry: RetryPolicy) -> list[str]:
        """The names of the folders in the folder."""
        ...

    async def afolders(self, where: Location, retry: RetryPolicy) -> list[str]: ...

    def step_polls(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> AbstractAsyncContextManager[StepPoll]:
        """Polls of the folder, while open; a check that fails is "not this poll" (None)."""
        ...

    # Files and objects.

    def exists(self, where: Location) -> bool: ...

    def read(self, where: Location, max_bytes: int, check_size: Callable[[int], None]) -> bytes:
        """At most ``max_bytes + 1`` bytes, ``check_size`` called with the size before a byte
        is read; FileNotFoundError when there is nothing, a ValueError when what is there is
        not read (not a plain file or object: a symlink, a folder)."""
        ...

    def write(self, where: Location, data: bytes) -> None: ...

    def upload(self, where: Location, path: Path) -> None:
        """The file at ``path``, streamed."""
        ...

    def holds_file_named(self, where: Location, start: str, most: int) -> bool:
        """Whether a file whose name starts with ``start`` lies anywhere below, looking at
        ``most`` files at most."""
        ...

    # Names of it elsewhere.

    def browser_url(self, where: Location) -> str:
        """Where a person looks at the folder."""
        ...

    def dataset(self, where: Location) -> tuple[str, str]:
        """OpenLineage's namespace and name of it."""
        ...
