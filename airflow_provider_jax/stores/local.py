"""Paths on the Airflow host, which the local backend's pods share: read with ``scandir`` and
``open``, the search off the event loop in the triggerer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import quote

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import (
    FinalizedStep,
    StepNames,
    StepRules,
    check_local_step,
    find_newest_local,
    list_local_folders,
    list_local_steps,
)
from airflow_provider_jax.runtime.stores.local import DRIVER as HOST_FILES
from airflow_provider_jax.runtime.stores.local import SCHEME
from airflow_provider_jax.stores.driver import Access, RetryPolicy, StepCheck, StepPoll


class LocalFiles:
    """This host's files; ``access`` and ``retry`` are not needed here."""

    scheme = SCHEME

    def __init__(self, access: Access) -> None:
        self.access = access

    def find_newest(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> FinalizedStep | None:
        return find_newest_local(
            where.key, rules.names, rules.min_step, rules.allow_legacy_atomic_rename
        )

    async def afind_newest(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> FinalizedStep | None:
        return await asyncio.to_thread(self.find_newest, where, rules, retry)

    def folders(self, where: Location, retry: RetryPolicy) -> list[str]:
        return list_local_folders(where.key)

    async def afolders(self, where: Location, retry: RetryPolicy) -> list[str]:
        return await asyncio.to_thread(list_local_folders, where.key)

    @contextlib.asynccontextmanager
    async def step_polls(
        self, where: Location, rules: StepRules, retry: RetryPolicy
    ) -> AsyncIterator[StepPoll]:
        """One ``scandir`` of the folder a poll, and one per step checked."""

        async def poll() -> tuple[StepNames, StepCheck]:
            steps = await asyncio.to_thread(list_local_steps, where.key, rules.names)

            async def check(step: int, name: str) -> FinalizedStep | None:
                return await asyncio.to_thread(
                    check_local_step, where.key, step, name, rules.allow_legacy_atomic_rename
                )

            return steps, check

        yield poll

    def exists(self, where: Location) -> bool:
        return HOST_FILES.exists(where)

    def read(self, where: Location, max_bytes: int, check_size: Callable[[int], None]) -> bytes:
        # A pod that shares the filesystem could leave a symlink to the worker's secrets.
        path = where.key
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as err:
            if isinstance(err, FileNotFoundError):
                raise
            raise ValueError(f"{path} cannot be read as a plain file: {err}") from None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{path} is not a regular file; nothing was read.")
            check_size(info.st_size)
            return f.read(max_bytes + 1)

    def write(self, where: Location, data: bytes) -> None:
        HOST_FILES.write(where, data)

    def upload(self, where: Location, path: Path) -> None:
        Path(where.key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, where.key)

    def holds_file_named(self, where: Location, start: str, most: int) -> bool:
        seen = 0
        for _, _, files in os.walk(where.key):
            if any(f.startswith(start) for f in files):
                return True
            seen += len(files)
            if seen > most:
                return False
        return False

    def browser_url(self, where: Location) -> str:
        """``file://`` and the path."""
        return f"file://{quote(where.key)}"

    def dataset(self, where: Location) -> tuple[str, str]:
        """``file`` and the path."""
        return "file", where.key.rstrip("/") or "/"
