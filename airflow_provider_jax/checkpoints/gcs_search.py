"""The GCS search for the newest finalized step, written once as a generator of list requests,
so the sync and async drivers (:mod:`.gcs_drivers`) share every rule and only differ in I/O.

GCS has no directories and no renames: orbax writes files straight into ``<root>/<step>/`` and
writes ``<root>/<step>/commit_success.txt`` last, so only that top-level marker means
"finalized". Deleting a step is not atomic, so a step must also still hold an item directory.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_provider_jax.checkpoints.query import (
    COMMIT_SUCCESS_FILE,
    FinalizedStep,
    GcsLocation,
    StepNameFormat,
)

log = logging.getLogger(__name__)


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
            return FinalizedStep(step, location.url(name), marker.updated or datetime.now(UTC))
    return None


def run_search(search: GcsSearch, fetch: Callable[[ListRequest], ListPage]) -> FinalizedStep | None:
    """Drive ``search`` to its answer, fetching each page with ``fetch``."""
    try:
        request = next(search)
        while True:
            request = search.send(fetch(request))
    except StopIteration as done:
        return done.value


async def arun_search(
    search: GcsSearch, fetch: Callable[[ListRequest], Awaitable[ListPage]]
) -> FinalizedStep | None:
    """:func:`run_search` for an async ``fetch``."""
    try:
        request = next(search)
        while True:
            request = search.send(await fetch(request))
    except StopIteration as done:
        return done.value


def _parse_rfc3339(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
