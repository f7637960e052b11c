"""GCS for the Airflow side, with the task's connection: the google provider's ``GCSHook`` in
the worker, ``GCSAsyncHook`` in the triggerer. Listings retry the same way in both (tenacity)
and give the same errors.

Storage clients are imported inside the calls: DAG files import this package through the
sensor, and parse time must stay cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tenacity import AsyncRetrying, RetryError, Retrying, retry_if_exception, stop_after_attempt

from airflow_provider_jax.hooks.retry import ExponentialJitter
from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import (
    CheckpointDirError,
    ListedObject,
    ListPage,
    ListRequest,
    object_url,
)
from airflow_provider_jax.runtime.stores.gcs import LIST_FIELDS, SCHEME, page_of
from airflow_provider_jax.stores.driver import Access, RetryPolicy, StorageUnavailableError
from airflow_provider_jax.stores.listed import AsyncFetch, Fetch, ListedStore

log = logging.getLogger(__name__)

# Seconds for one list call; a stuck call counts as a transient failure.
REQUEST_TIMEOUT = 30.0
TRANSIENT_HTTP_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
STORAGE_BROWSER = "https://console.cloud.google.com/storage/browser"


@dataclass(frozen=True)
class _ListErrors:
    """Sorts a client's errors into "retry it", "give up now, with a reason", and "not ours"."""

    where: Location
    conn_id: str
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
                object_url(self.where),
                state.outcome.exception(),
                state.next_action.sleep,
            ),
        }

    def translate(self, exc: BaseException) -> BaseException:
        """The error to raise once retrying is over; ``exc`` itself when it is not storage's."""
        if isinstance(exc, RetryError):
            last = exc.last_attempt
            return StorageUnavailableError(
                f"Listing {object_url(self.where)} failed {last.attempt_number} times: "
                f"{last.exception()!r}"
            )
        status = self.status_of(exc)
        if status is None:
            return exc
        url, bucket = object_url(self.where), self.where.bucket
        if status == 404:
            return CheckpointDirError(
                f"GCS bucket {bucket!r} does not exist (HTTP 404 listing {url})."
            )
        if status in (401, 403):
            return CheckpointDirError(
                f"Access denied (HTTP {status}) listing {url}: connection "
                f"{self.conn_id!r} needs storage.objects.list on bucket {bucket!r}."
            )
        return CheckpointDirError(f"GCS rejected listing {url} (HTTP {status}): {exc}")

    def reraise(self, exc: Exception) -> None:
        translated = self.translate(exc)
        if translated is exc:
            raise exc
        raise translated from exc


class GcsHooks(ListedStore):
    """GCS through the google provider's hooks, as ``access``."""

    scheme = SCHEME

    def __init__(self, access: Access) -> None:
        self.access = access

    @cached_property
    def hook(self) -> Any:
        """One ``GCSHook`` (and its storage client) for every call of this driver."""
        from airflow.providers.google.cloud.hooks.gcs import GCSHook

        return GCSHook(
            gcp_conn_id=self.access.conn_id, impersonation_chain=self.access.impersonation_chain
        )

    def fetcher(self, where: Location, retry: RetryPolicy) -> Fetch:
        """A sync listing through ``GCSHook``'s storage client."""
        import requests
        from google.api_core.exceptions import GoogleAPICallError
        from google.auth.exceptions import TransportError

        client = self.hook.get_conn()
        errors = _ListErrors(
            where,
            self.access.conn_id,
            lambda e: int(e.code) if isinstance(e, GoogleAPICallError) and e.code else None,
            (requests.ConnectionError, requests.Timeout, TransportError),
        )

        def list_once(request: ListRequest) -> ListPage:
            # retry=None: our policy retries, identically in both drivers.
            iterator = client.list_blobs(
                where.bucket,
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
                errors.reraise(exc)
                raise

        return fetch

    @contextlib.asynccontextmanager
    async def afetcher(self, where: Location, retry: RetryPolicy) -> AsyncIterator[AsyncFetch]:
        """An async listing through ``GCSAsyncHook`` (gcloud-aio-storage), retried like the
        sync one; one HTTP session while it is open."""
        # Seconds of imports the first time: off the event loop, or every trigger stalls meanwhile.
        await asyncio.to_thread(importlib.import_module, "airflow.providers.google.cloud.hooks.gcs")
        from aiohttp import ClientConnectionError, ClientResponseError, ClientSession
        from airflow.providers.google.cloud.hooks.gcs import GCSAsyncHook

        hook = GCSAsyncHook(
            gcp_conn_id=self.access.conn_id, impersonation_chain=self.access.impersonation_chain
        )
        errors = _ListErrors(
            where,
            self.access.conn_id,
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
                    where.bucket, params=params, timeout=int(REQUEST_TIMEOUT)
                )
                return page_of(data)

            async def fetch(request: ListRequest) -> ListPage:
                try:
                    return await AsyncRetrying(**errors.retry_args(retry))(list_once, request)
                except Exception as exc:
                    errors.reraise(exc)
                    raise

            yield fetch

    def exists(self, where: Location) -> bool:
        return self.hook.exists(where.bucket, where.key)

    def read(self, where: Location, max_bytes: int, check_size: Callable[[int], None]) -> bytes:
        from google.api_core.exceptions import NotFound

        try:
            blob = self.hook.get_conn().bucket(where.bucket).get_blob(where.key)
            if blob is None:
                raise FileNotFoundError(str(where))
            check_size(blob.size or 0)
            # The object may have been replaced since: never take more than the cap.
            return blob.download_as_bytes(end=max_bytes)  # inclusive: cap + 1 bytes
        except NotFound as err:
            raise FileNotFoundError(str(where)) from err

    def write(self, where: Location, data: bytes) -> None:
        self.hook.upload(where.bucket, where.key, data=data)

    def upload(self, where: Location, path: Path) -> None:
        self.hook.upload(where.bucket, where.key, filename=str(path))

    def holds_file_named(self, where: Location, start: str, most: int) -> bool:
        # GCS filters by the glob; the names are checked here too, for servers that ignore it.
        blobs = self.hook.get_conn().list_blobs(
            where.bucket, prefix=where.prefix, match_glob=f"{where.prefix}**{start}*"
        )
        for seen, blob in enumerate(blobs):
            if blob.name.rsplit("/", 1)[-1].startswith(start):
                return True
            if seen > most:
                return False
        return False

    def browser_url(self, where: Location) -> str:
        """The Cloud console's bucket browser."""
        return f"{STORAGE_BROWSER}/{quote(where.bucket)}/{quote(where.prefix)}"

    def dataset(self, where: Location) -> tuple[str, str]:
        """``gs://bucket`` and the object path."""
        return str(where.root), where.key.strip("/")
