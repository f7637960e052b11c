"""The checkpoint search of a store of objects listed a folder at a time (``delimiter="/"``:
GCS's ``objects.list``, and S3's and Azure's alike): a driver gives one listing call, sync and
async, and gets the sensor's, the triggers' and the event trigger's searches from it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import (
    CheckpointDirError,
    FinalizedStep,
    ListPage,
    ListRequest,
    StepNames,
    StepRules,
    arun_search,
    check_step,
    list_folders,
    list_steps,
    run_search,
    search,
)
from airflow_provider_jax.stores.driver import (
    RetryPolicy,
    StepCheck,
    StepPoll,
    StorageUnavailableError,
)

log = logging.getLogger(__name__)

Fetch = Callable[[ListRequest], ListPage]
AsyncFetch = Callable[[ListRequest], Awaitable[ListPage]]


class ListedStore(ABC):
    """The searches of :class:`~airflow_provider_jax.stores.driver.Driver`, answered by
    :meth:`fetcher` (sync) and :meth:`afetcher` (async) for the folder searched."""

    @abstractmethod
    def fetcher(self, where: Location, retry: RetryPolicy) -> Fetch:
        """One listing call, retried by ``retry``."""

    @abstractmethod
    def afetcher(
        self, where: Location, retry: RetryPolicy
    ) -> contextlib.AbstractAsyncContextManager[AsyncFetch]:
        """One async listing call, retried by ``retry``, while the context is open."""

    def find_newest(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> FinalizedStep | None:
        return run_search(search(where, rules), self.fetcher(where, retry))

    async def afind_newest(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> FinalizedStep | None:
        async with self.afetcher(where, retry) as fetch:
            return await arun_search(search(where, rules), fetch)

    def folders(self, where: Location, retry: RetryPolicy) -> list[str]:
        return run_search(list_folders(where), self.fetcher(where, retry))

    async def afolders(self, where: Location, retry: RetryPolicy) -> list[str]:
        async with self.afetcher(where, retry) as fetch:
            return await arun_search(list_folders(where), fetch)

    @contextlib.asynccontextmanager
    async def step_polls(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> AsyncIterator[StepPoll]:
        """One request per 1,000 step folders a poll, plus one per step a watcher needs
        checked: each step once per poll, however many watchers ask, and never again once
        finalized (while it is listed)."""
        finalized: dict[str, FinalizedStep] = {}  # step name -> once seen finalized

        async with self.afetcher(where, retry) as fetch:

            async def poll() -> tuple[StepNames, StepCheck]:
                steps = await arun_search(list_steps(where, rules.names, 0), fetch)
                present = {name for _, name in steps}
                for name in set(finalized) - present:
                    del finalized[name]
                checked: dict[str, asyncio.Task[FinalizedStep | None]] = {}

                async def check(step: int, name: str) -> FinalizedStep | None:
                    if name in finalized:
                        return finalized[name]
                    if name not in checked:
                        checked[name] = asyncio.ensure_future(
                            arun_search(check_step(where, step, name), fetch)
                        )
                    try:
                        found = await checked[name]
                    except (CheckpointDirError, StorageUnavailableError) as exc:
                        # Like a failed listing: not this poll. Raised into the watcher, it
                        # would end the trigger over one step's transient 503.
                        log.warning("Could not check step %s, will try again: %s", name, exc)
                        return None
                    if found is not None:
                        finalized[name] = found
                    return found

                return steps, check

            yield poll
