"""The emulated API server's wire: injected faults, the request log, and the Status bodies,
watch events and bookmarks it sends, shaped as kube-apiserver shapes them."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from harness.k8s_emulator.controller import JOBSET, POD
from harness.k8s_emulator.kueue_objects import WORKLOAD
from harness.k8s_emulator.rbac import Access

_KINDS = {
    JOBSET: ("jobset.x-k8s.io", "JobSet"),
    POD: ("", "Pod"),
    WORKLOAD: ("kueue.x-k8s.io", "Workload"),
}


@dataclass
class Faults:
    """Trouble to inject. ``rate`` of requests fail, picking uniformly among ``kinds``:
    an HTTP status, ``"reset"`` (connection dropped before the server acts) or ``"lost"``
    (dropped after it acted, so the client never hears). Watches end after about
    ``drop_watch_after`` seconds; with probability ``expire_rate`` the history they would
    resume from is compacted first, so the client meets 410 Gone and must list again.
    ``hold`` seconds delay each request ``only`` picks before the server acts (a slow page
    of a long list). ``seed`` fixes which requests fail, counted in arrival order."""

    rate: float = 0.0
    kinds: tuple[int | str, ...] = (429, 500, 503, "reset", "lost")
    retry_after: int = 1
    latency: float = 0.0
    hold: float = 0.0
    drop_watch_after: float | None = None
    expire_rate: float = 0.0
    only: Callable[[web.Request], bool] = lambda request: True
    seed: int | None = None

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def pick(self, request: web.Request) -> int | str | None:
        """The fault for this request, if it gets one."""
        if self.rate and self.only(request) and self._rng.random() < self.rate:
            return self._rng.choice(self.kinds)
        return None


@dataclass(frozen=True)
class Request:
    at: float
    method: str
    path: str
    query: str
    watch: bool
    status: int | str | None = None


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def fields_match(selector: str | None, obj: dict[str, Any]) -> bool:
    """Whether ``obj`` has every ``a.b=value`` of a field selector (equality terms only)."""
    for term in filter(None, (selector or "").split(",")):
        path, _, wanted = term.partition("=")
        value: Any = obj
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value != wanted:
            return False
    return True


def flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


def _status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response(_status_body(code, reason, message), status=code)


def forbidden(access: Access) -> web.Response:
    body = _status_body(403, "Forbidden", access.forbidden_message())
    base = access.resource.split("/")[0]
    body["details"] = {"group": access.group, "kind": base}
    if access.name:
        body["details"]["name"] = access.name
    return web.json_response(body, status=403)


def _not_found(kind: str, name: str) -> web.Response:
    group, _ = _KINDS[kind]
    resource = f"{kind}.{group}" if group else kind
    return status(404, "NotFound", f'{resource} "{name}" not found')


def _bookmark(kind: str, rv: int) -> dict[str, Any]:
    return {"kind": _KINDS[kind][1], "metadata": {"resourceVersion": str(rv)}}


async def _send(response: web.StreamResponse, kind: str, obj: dict[str, Any]) -> None:
    await response.write((json.dumps({"type": kind, "object": obj}) + "\n").encode())


def _reset(request: web.Request) -> web.Response:
    """Drop the connection without an answer, as a dying load balancer would."""
    if request.transport is not None:
        request.transport.abort()
    raise asyncio.CancelledError
