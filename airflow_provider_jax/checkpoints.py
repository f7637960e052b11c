"""Find the newest *finalized* Orbax checkpoint step in GCS or in a local directory.

Shared by ``OrbaxCheckpointSensor.poke`` (sync) and ``OrbaxCheckpointTrigger`` (async). The GCS
search is written once, as a generator that yields list requests; two small drivers answer them
with ``GCSHook`` or ``GCSAsyncHook``. Storage clients are imported inside the drivers because DAG
files import this module through the sensor, and parse time must stay cheap.

Finalization rules (orbax-checkpoint 0.12.x):

* GCS: files are written straight into ``<root>/<step>/`` and ``<root>/<step>/commit_success.txt``
  is written last. Only that top-level marker means "finalized".
* Local disk: a step is written as ``<step>.orbax-checkpoint-tmp[-<n>]`` and renamed. Since 0.12.3
  the marker is written before the rename; older local checkpoints have none, so in a directory
  where no step carries a marker, a non-temporary step directory counts as finalized.
* Deleting a step is not atomic, so a step must also still hold at least one item directory.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

COMMIT_SUCCESS_FILE = "commit_success.txt"
TMP_DIR_SUFFIX = ".orbax-checkpoint-tmp"
GCS_SCHEME = "gs://"
# Only what the search reads: keeps a 1,000-entry page small.
LIST_FIELDS = "items(name,updated),prefixes,nextPageToken"
# Seconds for one list call; a stuck call counts as a transient failure.
REQUEST_TIMEOUT = 30.0
TRANSIENT_HTTP_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class CheckpointDirError(ValueError):
    """Waiting cannot help (bad path, missing bucket, no permission, not a directory): fail now."""


class StorageUnavailableError(Exception):
    """Storage kept failing with retryable errors; the next poke may succeed."""


@dataclass(frozen=True)
class StepNameFormat:
    """Orbax's standard step names: ``[<step_prefix>_]<step>``, optionally zero-padded.

    Mirrors orbax's own parsing, so the sensor sees exactly the steps a ``CheckpointManager``
    with the same options would restore. Temporary directories never match.
    """

    step_prefix: str | None = None
    step_format_fixed_length: int | None = None

    def __post_init__(self) -> None:
        length = self.step_format_fixed_length
        if length is not None and (not isinstance(length, int) or length <= 0):
            raise ValueError(f"step_format_fixed_length must be a positive int, got {length!r}")

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        # Like orbax: zero-padded to exactly `length` digits, or longer without padding.
        n = self.step_format_fixed_length
        digits = rf"0\d{{{n - 1}}}|[1-9]\d{{{n - 1}}}\d*" if n else r"0|[1-9]\d*"
        prefix = re.escape(f"{self.step_prefix}_") if self.step_prefix else ""
        return re.compile(rf"{prefix}({digits})")

    def parse(self, name: str) -> int | None:
        """Return the step a directory name stands for, or None if it is not a step."""
        match = self._pattern.fullmatch(name)
        return int(match.group(1)) if match else None

    def build(self, step: int) -> str:
        digits = (
            f"{step:0{self.step_format_fixed_length}d}"
            if self.step_format_fixed_length
            else f"{step}"
        )
        return f"{self.step_prefix}_{digits}" if self.step_prefix else digits


@dataclass(frozen=True)
class FinalizedStep:
    """A step whose top-level commit marker was present when it was checked."""

    step: int
    path: str
    finalized_at: datetime

    def to_xcom(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "path": self.path,
            "finalized_at": self.finalized_at.astimezone(UTC).isoformat(),
        }


@dataclass(frozen=True)
class CheckpointQuery:
    """What to look for. Plain data, so the trigger can serialize it as is."""

    checkpoint_dir: str
    min_step: int = 0
    step_prefix: str | None = None
    step_format_fixed_length: int | None = None
    gcp_conn_id: str = "google_cloud_default"

    @property
    def name_format(self) -> StepNameFormat:
        return StepNameFormat(self.step_prefix, self.step_format_fixed_length)

    @property
    def is_gcs(self) -> bool:
        return self.checkpoint_dir.startswith(GCS_SCHEME)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for 429/5xx/connection errors within one check."""

    attempts: int = 5
    initial_delay: float = 0.5
    max_delay: float = 8.0

    def delays(self) -> Iterator[float]:
        """Sleeps between attempts; one fewer than ``attempts``."""
        for attempt in range(self.attempts - 1):
            ceiling = min(self.max_delay, self.initial_delay * 2**attempt)
            yield random.uniform(ceiling / 2, ceiling)


DEFAULT_RETRY = RetryPolicy()


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


def check_checkpoint_dir(value: object) -> str:
    """``value`` if it is ``gs://<bucket>/<path>`` or an absolute local path; else a
    :class:`CheckpointDirError` that says why. A wrong path would otherwise read as "no
    checkpoint yet" until the sensor times out."""
    expected = "gs://<bucket>/<path> or an absolute local path"
    if not isinstance(value, str) or not value.strip():
        raise CheckpointDirError(f"checkpoint_dir must be {expected}, got {value!r}.")
    if value.startswith(GCS_SCHEME):
        bucket = GcsLocation.parse(value).bucket
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise CheckpointDirError(
                f"checkpoint_dir {value!r}: {bucket!r} is not a valid GCS bucket name "
                "(3-222 lowercase letters, digits, '-', '_' and '.')."
            )
        return value
    if "://" in value or value.startswith("gs:"):
        raise CheckpointDirError(
            f"checkpoint_dir {value!r}: only GCS is supported; use {expected}."
        )
    if not os.path.isabs(value):
        raise CheckpointDirError(
            f"checkpoint_dir {value!r} is relative, so it would depend on the worker's "
            f"working directory; use {expected}."
        )
    return value


# --- GCS: one search, two drivers ------------------------------------------------------------


@dataclass(frozen=True)
class GcsLocation:
    bucket: str
    prefix: str  # "" for the bucket root, else ends with "/"

    @classmethod
    def parse(cls, url: str) -> GcsLocation:
        parts = urlsplit(url)
        if parts.scheme != "gs" or not parts.netloc:
            raise CheckpointDirError(f"Expected gs://<bucket>/<path>, got {url!r}")
        path = parts.path.strip("/")
        return cls(parts.netloc, f"{path}/" if path else "")

    def url(self, relative: str = "") -> str:
        return f"{GCS_SCHEME}{self.bucket}/{self.prefix}{relative}"


@dataclass(frozen=True)
class ListRequest:
    """One ``objects.list`` call with ``delimiter="/"``."""

    prefix: str
    page_token: str | None = None


@dataclass(frozen=True)
class ListedObject:
    name: str
    updated: datetime | None


@dataclass(frozen=True)
class ListPage:
    objects: tuple[ListedObject, ...] = ()
    prefixes: tuple[str, ...] = ()
    next_page_token: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ListPage:
        """Build a page from an ``objects.list`` JSON response."""
        objects = tuple(
            ListedObject(item["name"], _parse_rfc3339(item.get("updated")))
            for item in data.get("items") or ()
        )
        return cls(objects, tuple(data.get("prefixes") or ()), data.get("nextPageToken") or None)


GcsSearch = Generator[ListRequest, ListPage, FinalizedStep | None]


def search_gcs(location: GcsLocation, names: StepNameFormat, min_step: int) -> GcsSearch:
    """Yield list requests, receive their pages, return the newest finalized step.

    1. List the root with ``delimiter="/"`` (following pages) and keep the step directories.
    2. Newest first, list each step's top level: one request per step checked, however many
       files the step holds. Stop at the first step that has the marker and an item directory.
    """
    steps: list[tuple[int, str]] = []
    token: str | None = None
    while True:
        page = yield ListRequest(location.prefix, token)
        for prefix in page.prefixes:
            name = prefix[len(location.prefix) :].rstrip("/")
            step = names.parse(name)
            if step is not None and step >= min_step:
                steps.append((step, name))
        token = page.next_page_token
        if not token:
            break

    for step, name in sorted(steps, reverse=True):
        step_prefix = f"{location.prefix}{name}/"
        marker: ListedObject | None = None
        has_items = False
        token = None
        while True:
            page = yield ListRequest(step_prefix, token)
            for obj in page.objects:
                if obj.name == step_prefix + COMMIT_SUCCESS_FILE:
                    marker = obj
            has_items = has_items or bool(page.prefixes)
            token = page.next_page_token
            if not token or (marker and has_items):
                break
        if marker is None:
            log.info(
                "Step %s is not finalized (no %s yet)", location.url(name), COMMIT_SUCCESS_FILE
            )
        elif not has_items:
            log.info("Step %s has its marker but no items: being deleted", location.url(name))
        else:
            return FinalizedStep(step, location.url(name), marker.updated or _utcnow())
    return None


def _run_search(
    search: GcsSearch, fetch: Callable[[ListRequest], ListPage]
) -> FinalizedStep | None:
    try:
        request = next(search)
        while True:
            request = search.send(fetch(request))
    except StopIteration as done:
        return done.value


async def _arun_search(
    search: GcsSearch, fetch: Callable[[ListRequest], Awaitable[ListPage]]
) -> FinalizedStep | None:
    try:
        request = next(search)
        while True:
            request = search.send(await fetch(request))
    except StopIteration as done:
        return done.value


@dataclass
class _Failure:
    """A storage error sorted into 'retry it' or 'give up now'."""

    transient: bool
    error: Exception = field(repr=False)


def _http_failure(status: int, exc: Exception, location: GcsLocation, gcp_conn_id: str) -> _Failure:
    if status in TRANSIENT_HTTP_STATUSES:
        return _Failure(True, exc)
    where = location.url()
    if status == 404:
        message = f"GCS bucket {location.bucket!r} does not exist (HTTP 404 listing {where})."
    elif status in (401, 403):
        message = (
            f"Access denied (HTTP {status}) listing {where}: connection {gcp_conn_id!r} needs "
            f"storage.objects.list on bucket {location.bucket!r}."
        )
    else:
        message = f"GCS rejected listing {where} (HTTP {status}): {exc}"
    return _Failure(False, CheckpointDirError(message))


def _give_up(failure: _Failure, location: GcsLocation, attempts: int) -> Exception:
    if not failure.transient:
        return failure.error
    return StorageUnavailableError(
        f"Listing {location.url()} failed {attempts} times: {failure.error!r}"
    )


def find_newest_gcs(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Sync driver: answer the search with ``GCSHook``'s storage client."""
    import requests
    from airflow.providers.google.cloud.hooks.gcs import GCSHook
    from google.api_core.exceptions import GoogleAPICallError
    from google.auth.exceptions import TransportError

    location = GcsLocation.parse(query.checkpoint_dir)
    client = GCSHook(gcp_conn_id=query.gcp_conn_id).get_conn()

    def list_once(request: ListRequest) -> ListPage:
        # retry=None: our policy retries, identically in both modes.
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

    def classify(exc: Exception) -> _Failure | None:
        if isinstance(exc, GoogleAPICallError) and exc.code is not None:
            return _http_failure(int(exc.code), exc, location, query.gcp_conn_id)
        network = (requests.ConnectionError, requests.Timeout, TransportError, ConnectionError)
        if isinstance(exc, (*network, TimeoutError)):
            return _Failure(True, exc)
        return None

    def fetch(request: ListRequest) -> ListPage:
        delays = retry.delays()
        for attempt in range(1, retry.attempts + 1):
            try:
                return list_once(request)
            except Exception as exc:
                failure = classify(exc)
                if failure is None:
                    raise
                delay = next(delays, None) if failure.transient else None
                if delay is None:
                    raise _give_up(failure, location, attempt) from exc
                log.warning("Listing %s failed (%r); retrying in %.1fs", request.prefix, exc, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    return _run_search(search_gcs(location, query.name_format, query.min_step), fetch)


async def afind_newest_gcs(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Async driver: answer the search with ``GCSAsyncHook`` (gcloud-aio-storage)."""
    from aiohttp import ClientConnectionError, ClientResponseError, ClientSession
    from airflow.providers.google.cloud.hooks.gcs import GCSAsyncHook

    location = GcsLocation.parse(query.checkpoint_dir)
    hook = GCSAsyncHook(gcp_conn_id=query.gcp_conn_id)

    def classify(exc: Exception) -> _Failure | None:
        if isinstance(exc, ClientResponseError):
            return _http_failure(exc.status, exc, location, query.gcp_conn_id)
        if isinstance(exc, (ClientConnectionError, ConnectionError, TimeoutError)):
            return _Failure(True, exc)
        return None

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
            delays = retry.delays()
            for attempt in range(1, retry.attempts + 1):
                try:
                    return await list_once(request)
                except Exception as exc:
                    failure = classify(exc)
                    if failure is None:
                        raise
                    delay = next(delays, None) if failure.transient else None
                    if delay is None:
                        raise _give_up(failure, location, attempt) from exc
                    log.warning(
                        "Listing %s failed (%r); retrying in %.1fs", request.prefix, exc, delay
                    )
                    await asyncio.sleep(delay)
            raise AssertionError("unreachable")

        return await _arun_search(search_gcs(location, query.name_format, query.min_step), fetch)


# --- Local filesystem (and gcsfuse mounts) -----------------------------------------------------


@dataclass(frozen=True)
class _LocalStep:
    marker_mtime: float | None
    has_items: bool


def _read_local_step(path: Path) -> _LocalStep | None:
    """Top level of one step directory; None if it vanished meanwhile."""
    marker_mtime: float | None = None
    has_items = False
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name == COMMIT_SUCCESS_FILE:
                    marker_mtime = entry.stat().st_mtime
                elif entry.is_dir():
                    has_items = True
    except (FileNotFoundError, NotADirectoryError):
        return None
    return _LocalStep(marker_mtime, has_items)


def find_newest_local(query: CheckpointQuery) -> FinalizedStep | None:
    """Newest finalized step under a local directory; None while there is none (or no dir)."""
    root = Path(query.checkpoint_dir).expanduser().absolute()
    names = query.name_format
    try:
        with os.scandir(root) as entries:
            steps = [
                (step, entry.name)
                for entry in entries
                if (step := names.parse(entry.name)) is not None and entry.is_dir()
            ]
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise CheckpointDirError(f"checkpoint_dir {str(root)!r} is not a directory") from exc
    except PermissionError as exc:
        raise CheckpointDirError(f"No permission to list checkpoint_dir {str(root)!r}") from exc

    # A marker on any step means orbax >= 0.12.3 wrote this directory: then a step without one
    # is being written or deleted. Only in a directory with no markers at all does a plain
    # (non-temporary) step directory count as finalized.
    legacy: FinalizedStep | None = None
    markers_seen = False
    for step, name in sorted(steps, reverse=True):
        path = root / name
        contents = _read_local_step(path)
        if contents is None:
            continue
        if contents.marker_mtime is not None:
            markers_seen = True
            if step < query.min_step:
                return None
            if contents.has_items:
                return FinalizedStep(step, str(path), _from_timestamp(contents.marker_mtime))
            log.info("Step %s has its marker but no items: being deleted", path)
        elif not markers_seen and legacy is None and contents.has_items and step >= query.min_step:
            try:
                legacy = FinalizedStep(step, str(path), _from_timestamp(path.stat().st_mtime))
            except FileNotFoundError:
                continue
    return None if markers_seen else legacy


# --- Entry points ------------------------------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _check_supported(query: CheckpointQuery) -> None:
    if not query.is_gcs and _SCHEME.match(query.checkpoint_dir):
        raise CheckpointDirError(
            f"checkpoint_dir must be gs://<bucket>/<path> or a local path, got {query.checkpoint_dir!r}"
        )


def find_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Blocking check, for ``poke``."""
    _check_supported(query)
    if query.is_gcs:
        return find_newest_gcs(query, retry)
    return find_newest_local(query)


async def afind_newest_finalized(
    query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY
) -> FinalizedStep | None:
    """Non-blocking check, for the triggerer's event loop."""
    _check_supported(query)
    if query.is_gcs:
        return await afind_newest_gcs(query, retry)
    return await asyncio.to_thread(find_newest_local, query)


# --- Helpers -----------------------------------------------------------------------------------


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _from_timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _parse_rfc3339(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
