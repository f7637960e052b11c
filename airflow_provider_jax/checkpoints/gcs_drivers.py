"""Answer the GCS search's list requests: with ``GCSHook`` for ``poke``, with ``GCSAsyncHook``
in the triggerer. Both retry the same way (tenacity) and give the same errors.

Storage clients are imported inside the drivers: DAG files import this package through the
sensor, and parse time must stay cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, RetryError, Retrying, retry_if_exception, stop_after_attempt

from airflow_provider_jax.checkpoints.query import (
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    GcsLocation,
    StorageUnavailableError,
)
from airflow_provider_jax.hooks.retry import ExponentialJitter
from airflow_provider_jax.runtime.orbax_steps import (
    LIST_FIELDS,
    ListedObject,
    ListPage,
    ListRequest,
    arun_search,
    list_gcs_folders,
    run_search,
    search_gcs,
)

log = logging.getLogger(__name__)

# Seconds for one list call; a stuck call counts as a transient failure.
REQUEST_TIMEOUT = 30.0
TRANSIENT_HTTP_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How often one list call is tried on 429/5xx/connection errors within one check, and
    how long to wait between tries (exponential, with jitter)."""

    attempts: int = 5
    initial_delay: float = 0.5
    max_delay: float = 8.0


DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True)
class _ListErrors:
    """Sorts a client's errors into "retry it", "give up now, with a reason", and "not ours"."""

    location: GcsLocation
    gcp_conn_id: str
    status_of: Callable[[BaseException], int | None]
    network: tuple[type[BaseException], ...]

    def transient(self, exc: BaseException) -> bool:
        status = self.status_of(exc)
        if status is not None:
            return status in TRANSIENT_HTTP_STATUSES
        return isinstance(exc, (*self.network, ConnectionError, TimeoutError))

    def retry_args(self, policy: RetryPolicy) -> dict[str, Any]:
        return {
            "retry": retry_if_exception(self.transient),
            "stop": stop_after_attempt(policy.attempts),
            "wait": ExponentialJitter(policy.initial_delay, policy.max_delay),
            "before_sleep": lambda state: log.warning(
                "Listing %s failed (%r); retrying in %.1fs",
                self.location.url(),
                state.outcome.exception(),
                state.next_action.sleep,
            ),
        }

    def translate(self, exc: BaseException) -> BaseException:
        """The error to raise once retrying is over; ``exc`` itself when it is not storage's."""
        if isinstance(exc, RetryError):
            last = exc.last_attempt
            return StorageUnavailableError(
                f"Listing {self.location.url()} failed {last.attempt_number} times: "
                f"{last.exception()!r}"
            )
        status = self.status_of(exc)
        if status is None:
            return exc
        where, bucket = self.location.url(), self.location.bucket
        if status == 404:
            return CheckpointDirError(
                f"GCS bucket {bucket!r} does not exist (HTTP 404 listing {where})."
            )
        if status in (401, 403):
            return CheckpointDirError(
                f"Access denied (HTTP {status}) listing {where}: connection "
                f"{self.gcp_conn_id!r} needs storage.objects.list on bucket {bucket!r}."
            )
        return CheckpointDirError(f"GCS rejected listing {where} (HTTP {status}): {exc}")


def _reraise(errors: _ListErrors, exc: Exception) -> None:
    translated = errors.translate(exc)
    if translated is exc:
        raise exc
    raise translated from exc


def gcs_fetcher(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> Callable[[ListRequest], ListPage]:
    """A sync ``fetch`` for the GCS search generators, through ``GCSHook``'s storage client."""
    import requests
    from airflow.providers.google.cloud.hooks.gcs import GCSHook
    from google.api_core.exceptions import GoogleAPICallError
    from google.auth.exceptions import TransportError

    location = GcsLocation.parse(query.checkpoint_dir)
    client = GCSHook(gcp_conn_id=query.gcp_conn_id).get_conn()
    errors = _ListErrors(
        location,
        query.gcp_conn_id,
        lambda e: int(e.code) if isinstance(e, GoogleAPICallError) and e.code else None,
        (requests.ConnectionError, requests.Timeout, TransportError),
    )

    def list_once(request: ListRequest) -> ListPage:
        # retry=None: our policy retries, identically in both drivers.
        iterator = client.list_blobs(
            location.bucket,
            prefix=request.prefix,
            delimiter="/",
            page_token=request.page_token,
            fields=LIST_FIELDS,
            retry=None,
            timeout=REQUEST_TIMEOUT,
        )
        page = next(iterator.pages)
        objects = tuple(ListedObject(blob.name, blob.updated) for blob in page)
        return ListPage(objects, tuple(page.prefixes), iterator.next_page_token)

    def fetch(request: ListRequest) -> ListPage:
        try:
            return Retrying(**errors.retry_args(retry))(list_once, request)
        except Exception as exc:
            _reraise(errors, exc)
            raise

    return fetch


def find_newest_gcs(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Sync driver: answer the search with ``GCSHook``."""
    location = GcsLocation.parse(query.checkpoint_dir)
    search = search_gcs(location, query.name_format, query.min_step)
    return run_search(search, gcs_fetcher(query, retry))


def gcs_folders(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY) -> list[str]:
    """The checkpoint folder's folders, every page."""
    location = GcsLocation.parse(query.checkpoint_dir)
    return run_search(list_gcs_folders(location), gcs_fetcher(query, retry))


async def agcs_folders(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY) -> list[str]:
    """:func:`gcs_folders` in the triggerer."""
    location = GcsLocation.parse(query.checkpoint_dir)
    async with agcs_fetcher(query, retry) as fetch:
        return await arun_search(list_gcs_folders(location), fetch)


@contextlib.asynccontextmanager
async def agcs_fetcher(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> AsyncIterator[Callable[[ListRequest], Awaitable[ListPage]]]:
    """An async ``fetch`` for the GCS search generators, through ``GCSAsyncHook``
    (gcloud-aio-storage), retried like the sync driver; one HTTP session while it is open."""
    # Seconds of imports the first time: off the event loop, or every trigger stalls meanwhile.
    await asyncio.to_thread(importlib.import_module, "airflow.providers.google.cloud.hooks.gcs")
    from aiohttp import ClientConnectionError, ClientResponseError, ClientSession
    from airflow.providers.google.cloud.hooks.gcs import GCSAsyncHook

    location = GcsLocation.parse(query.checkpoint_dir)
    hook = GCSAsyncHook(gcp_conn_id=query.gcp_conn_id)
    errors = _ListErrors(
        location,
        query.gcp_conn_id,
        lambda e: e.status if isinstance(e, ClientResponseError) else None,
        (ClientConnectionError,),
    )
    async with ClientSession() as session:
        storage = await hook.get_storage_client(session)

        async def list_once(request: ListRequest) -> ListPage:
            params = {"prefix": request.prefix, "delimiter": "/", "fields": LIST_FIELDS}
            if request.page_token:
                params["pageToken"] = request.page_token
            data = await storage.list_objects(
                location.bucket, params=params, timeout=int(REQUEST_TIMEOUT)
            )
            return ListPage.from_json(data)

        async def fetch(request: ListRequest) -> ListPage:
            try:
                return await AsyncRetrying(**errors.retry_args(retry))(list_once, request)
            except Exception as exc:
                _reraise(errors, exc)
                raise

        yield fetch


async def afind_newest_gcs(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Async driver: answer the search with ``GCSAsyncHook``."""
    location = GcsLocation.parse(query.checkpoint_dir)
    async with agcs_fetcher(query, retry) as fetch:
        return await arun_search(search_gcs(location, query.name_format, query.min_step), fetch)
