"""The kubelet's ``/containerLogs`` endpoint over a log file whose lines carry RFC 3339
timestamps: ``follow``, ``tailLines``, ``timestamps``, ``sinceSeconds``/``sinceTime`` and
``limitBytes``, as the API server passes them through from ``pods/log``."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

from aiohttp import web


def _since(request: web.Request) -> str | None:
    if seconds := request.query.get("sinceSeconds"):
        at = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=int(seconds))
        return at.isoformat(timespec="microseconds").replace("+00:00", "Z")
    return request.query.get("sinceTime")


def _shown(line: str, timestamps: bool) -> str:
    return line if timestamps else line.split(" ", 1)[-1]


async def serve_log(
    request: web.Request, log_file: Path, exited: asyncio.Event
) -> web.StreamResponse:
    follow = request.query.get("follow") == "true"
    timestamps = request.query.get("timestamps") == "true"
    since = _since(request)
    limit = int(request.query.get("limitBytes", 0)) or None
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    sent = 0

    async def send(line: str) -> bool:
        nonlocal sent
        data = (_shown(line, timestamps) + "\n").encode()
        if limit is not None:
            data = data[: limit - sent]
        await response.write(data)
        sent += len(data)
        return limit is None or sent < limit

    while not log_file.exists() and follow and not exited.is_set():
        await asyncio.sleep(0.1)
    lines = log_file.read_text().splitlines() if log_file.exists() else []
    if since:
        lines = [line for line in lines if line.split(" ", 1)[0] >= since]
    if tail := request.query.get("tailLines"):
        lines = lines[-int(tail) :] if int(tail) else []
    for line in lines:
        if not await send(line):
            return response
    if not follow:
        return response
    with log_file.open() as stream:
        stream.seek(0, 2)  # what was there is sent; follow what comes
        pending = ""
        while True:
            chunk = stream.read()
            if chunk:
                pending += chunk
                *complete, pending = pending.split("\n")
                for line in complete:
                    if not await send(line):
                        return response
            elif exited.is_set():
                return response
            else:
                await asyncio.sleep(0.1)
