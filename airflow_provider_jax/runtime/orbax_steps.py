"""Which Orbax steps are finalized, decided once for the Airflow side (``OrbaxCheckpointSensor``,
its trigger) and for the pods (``runtime.resumed_from``): stdlib only, and no I/O of its own.
A store of objects (GCS) answers the search's listings (:func:`search`), with the pods' driver
or the Airflow side's hooks; a local folder is read with ``scandir``.

Step names follow orbax-checkpoint 0.12.x, so a search sees exactly the steps a
``CheckpointManager`` with the same options would restore. What is finalized follows Orbax's
two atomicity modes (``orbax/checkpoint/_src/path/atomicity.py``, ``AtomicityOptions``):

- ``CommitFileTemporaryPath`` (GCS's default, and any storage that asks for it, as Flax's
  gemma example does on local disk) writes straight into ``<root>/<step>/`` and writes
  ``<root>/<step>/commit_success.txt`` last.
- ``AtomicRenameTemporaryPath`` (local disk's default) writes ``<step>.orbax-checkpoint-tmp``
  and renames it; since orbax-checkpoint 0.12.3 it writes the same marker before the rename.

So with a current Orbax, in either mode, the top-level marker alone means "finalized": a
step folder without it is being written. Only a local checkpoint that an Orbax older than
0.12.3 saved by renaming has no marker; reading those is Orbax's own opt-in,
``allow_legacy_atomic_rename``, taken here by the same name. It is not applied to GCS, where a
"rename" is a copy of every object and a final-named folder exists while it is half copied.
Deleting a step is not atomic either, so a step must also still hold an item directory.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from airflow_provider_jax.runtime.location import Location

log = logging.getLogger(__name__)

COMMIT_SUCCESS_FILE = "commit_success.txt"
TMP_DIR_SUFFIX = ".orbax-checkpoint-tmp"


class CheckpointDirError(ValueError):
    """Waiting cannot help (bad path, missing bucket, no permission, not a directory): fail now."""


_ANY_STEP = re.compile(r"(?:(.+)_)?(\d+)")  # a folder named like a step, in any prefix


@dataclass(frozen=True)
class StepNameFormat:
    """Orbax's standard step names: ``[<step_prefix>_]<step>``, optionally zero-padded.
    Temporary directories never match."""

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

    def steps(self, folders: Iterable[str], min_step: int = 0) -> StepNames:
        """The folders that are steps ``>= min_step``, ascending."""
        return sorted(
            (step, name)
            for name in folders
            if (step := self.parse(name)) is not None and step >= min_step
        )

    def hint(self, folders: Iterable[str]) -> str:
        """What would match folders that look like steps named another way (Flax writes
        ``checkpoint_<N>``, some loops pad), or that nothing is there at all (a training task
        without ``output_dir`` saves nothing); empty when neither."""
        folders = list(folders)
        if not folders:
            return (
                "nothing has been saved there yet; a JAX task of this provider writes there "
                "only with output_dir=<this folder's parent>, saving to runtime.checkpoint_dir()"
            )
        misses: dict[str, list[str]] = {}
        for name in sorted(folders):
            match = _ANY_STEP.fullmatch(name)
            if match is None or self.parse(name) is not None:
                continue
            prefix, digits = match.group(1), match.group(2)
            padded = len(digits) if digits.startswith("0") and len(digits) > 1 else None
            fits = StepNameFormat(prefix, padded)
            if fits.parse(name) is None:
                continue
            fix = " and ".join(
                f"{field}={getattr(fits, field)!r}"
                for field in ("step_prefix", "step_format_fixed_length")
                if getattr(fits, field) != getattr(self, field)
            )
            misses.setdefault(fix, []).append(name)
        return "; ".join(
            f"{len(found)} folder(s) such as {found[0]!r} look like steps: {fix} would match"
            for fix, found in misses.items()
        )

    def build(self, step: int) -> str:
        length = self.step_format_fixed_length
        digits = f"{step:0{length}d}" if length else f"{step}"
        return f"{self.step_prefix}_{digits}" if self.step_prefix else digits


@dataclass(frozen=True)
class StepRules:
    """Which steps a search reports: named as Orbax's ``CheckpointManager`` names them, at
    least ``min_step``, and, with Orbax's ``allow_legacy_atomic_rename``, a local step that an
    Orbax older than 0.12.3 renamed into place without a marker."""

    names: StepNameFormat = StepNameFormat()
    min_step: int = 0
    allow_legacy_atomic_rename: bool = False


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
class ListRequest:
    """One listing of a folder of a store of objects, with ``delimiter="/"`` (GCS's
    ``objects.list``): its objects and the folders below it, a page at a time."""

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


T = TypeVar("T")
Listing = Generator[ListRequest, ListPage, T]  # yields list requests, is sent their pages
Search = Listing[FinalizedStep | None]
StepNames = list[tuple[int, str]]


def object_url(location: Location, relative: str = "") -> str:
    """``<scheme>://<bucket>/<prefix><relative>``: a folder of a store of objects, or what
    is below it."""
    return f"{location.scheme}://{location.bucket}/{location.prefix}{relative}"


def list_folders(location: Location) -> Listing[list[str]]:
    """List the folder with ``delimiter="/"`` (following pages): its folders' names. One
    request per 1,000 entries."""
    folders: list[str] = []
    token: str | None = None
    while True:
        page = yield ListRequest(location.prefix, token)
        folders += [prefix[len(location.prefix) :].rstrip("/") for prefix in page.prefixes]
        token = page.next_page_token
        if not token:
            return folders


def list_steps(location: Location, names: StepNameFormat, min_step: int) -> Listing[StepNames]:
    """The step folders ``>= min_step``, ascending."""
    folders = yield from list_folders(location)
    return names.steps(folders, min_step)


def check_step(location: Location, step: int, name: str) -> Search:
    """List one step's top level: one request however many files it holds. Finalized when it
    has the marker and still an item directory (deleting is not atomic)."""
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
    path = object_url(location, name)
    if marker is None:
        log.info("Step %s is not finalized (no %s yet)", path, COMMIT_SUCCESS_FILE)
    elif not has_items:
        log.info("Step %s has its marker but no items: being deleted", path)
    else:
        return FinalizedStep(step, path, marker.updated or datetime.now(UTC))
    return None


def search(location: Location, rules: StepRules) -> Search:
    """Yield list requests, receive their pages, return the newest finalized step: the
    folder's listing, then each step newest first until one is finalized. A "rename" in a
    store of objects is a copy of each, so ``allow_legacy_atomic_rename`` never applies."""
    steps = yield from list_steps(location, rules.names, rules.min_step)
    for step, name in reversed(steps):
        found = yield from check_step(location, step, name)
        if found is not None:
            return found
    return None


def run_search(listing: Listing[T], fetch: Callable[[ListRequest], ListPage]) -> T:
    """Drive ``listing`` to its answer, fetching each page with ``fetch``."""
    try:
        request = next(listing)
        while True:
            request = listing.send(fetch(request))
    except StopIteration as done:
        return done.value


async def arun_search(
    listing: Listing[T], fetch: Callable[[ListRequest], Awaitable[ListPage]]
) -> T:
    """:func:`run_search` for an async ``fetch``."""
    try:
        request = next(listing)
        while True:
            request = listing.send(await fetch(request))
    except StopIteration as done:
        return done.value


def parse_rfc3339(value: str | None) -> datetime | None:
    """A listing's RFC 3339 time, in UTC when it names no zone."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


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


def list_local_folders(checkpoint_dir: str) -> list[str]:
    """The folders of a local directory (one ``scandir``); [] while there is no directory."""
    root = Path(checkpoint_dir)
    try:
        with os.scandir(root) as entries:
            return [entry.name for entry in entries if entry.is_dir()]
    except FileNotFoundError:
        return []
    except NotADirectoryError as exc:
        raise CheckpointDirError(f"checkpoint_dir {str(root)!r} is not a directory") from exc
    except PermissionError as exc:
        raise CheckpointDirError(f"No permission to list checkpoint_dir {str(root)!r}") from exc


def list_local_steps(checkpoint_dir: str, names: StepNameFormat) -> StepNames:
    """The step folders under a local directory, ascending."""
    return names.steps(list_local_folders(checkpoint_dir))


def check_local_step(
    checkpoint_dir: str, step: int, name: str, allow_legacy_atomic_rename: bool = False
) -> FinalizedStep | None:
    """Read one step folder of ``checkpoint_dir``: finalized, or None.

    Finalized when it holds the top-level marker and an item directory. Without the marker it
    is being written (``CommitFileTemporaryPath`` writes into the final name), unless
    ``allow_legacy_atomic_rename``: then, as in Orbax's own reader, a renamed folder (one with
    its final name) counts, dated by its mtime.
    """
    path = Path(checkpoint_dir) / name
    contents = _read_local_step(path)
    if contents is None or not contents.has_items:
        if contents is not None and contents.marker_mtime is not None:
            log.info("Step %s has its marker but no items: being deleted", path)
        return None
    if contents.marker_mtime is not None:
        return FinalizedStep(step, str(path), _from_timestamp(contents.marker_mtime))
    if not allow_legacy_atomic_rename:
        log.info("Step %s is not finalized (no %s yet)", path, COMMIT_SUCCESS_FILE)
        return None
    try:
        return FinalizedStep(step, str(path), _from_timestamp(path.stat().st_mtime))
    except FileNotFoundError:
        return None


def find_newest_local(
    checkpoint_dir: str,
    names: StepNameFormat,
    min_step: int = 0,
    allow_legacy_atomic_rename: bool = False,
) -> FinalizedStep | None:
    """Newest finalized step under a local directory; None while there is none (or no dir).
    Reads steps newest first and stops at the first finalized one."""
    for step, name in reversed(list_local_steps(checkpoint_dir, names)):
        if step < min_step:
            return None
        found = check_local_step(checkpoint_dir, step, name, allow_legacy_atomic_rename)
        if found is not None:
            return found
    return None


def _from_timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
