"""The HTTP face of the emulator: the slice of the Kubernetes API that our hooks use.

JobSets (create, get, list, watch, merge-patch, delete), pods (get, list, watch, log), with the API server's
status codes and ``Status`` bodies, bearer-token auth, RBAC (``rbac.py``), request counting, and faults on demand:
429/500/503 with ``Retry-After``, connections reset before or after the work is done, latency,
watches that drop, and compacted history (410 Gone).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from harness.k8s_emulator.controller import JOBSET, POD, Controller
from harness.k8s_emulator.defaults import defaulted_jobset
from harness.k8s_emulator.kueue import Kueue
from harness.k8s_emulator.kueue_api import kueue_routes
from harness.k8s_emulator.rbac import Access, Role
from harness.k8s_emulator.store import Expired, Store, parse_selector
from harness.k8s_emulator.wire import (
    _REASONS,
    Faults,
    Request,
    _bookmark,
    _not_found,
    _reset,
    _send,
    _status_body,
    fields_match,
    flag,
    forbidden,
    status,
)

JOBSETS_PATH = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets"
PODS_PATH = "/api/v1/namespaces/{namespace}/pods"
EVENTS_PATH = "/api/v1/namespaces/{namespace}/events"


@dataclass
class Api:
    store: Store
    controller: Controller
    kueue: Kueue
    validate: Callable[[dict[str, Any]], list[str]]
    faults: Faults = field(default_factory=Faults)
    tokens: set[str] = field(default_factory=lambda: {"emulator-token"})
    role: Role | None = None  # what every token may do; None: anything
    bookmark_interval: float = 5.0
    requests: list[Request] = field(default_factory=list)
    minted: list[str] = field(default_factory=list)  # OAuth tokens handed out at /token
    submitted: list[dict[str, Any]] = field(default_factory=list)
    streams: set[asyncio.Task[Any]] = field(default_factory=set)
    watches: set[asyncio.Task[Any]] = field(default_factory=set)  # the streams that watch

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        app.add_routes(
            [
                web.get("/version", self.version),
                web.post("/token", self.token),
                web.get(JOBSETS_PATH, self.list_jobsets),
                web.post(JOBSETS_PATH, self.create_jobset),
                web.get(JOBSETS_PATH + "/{name}", self.get_jobset),
                web.patch(JOBSETS_PATH + "/{name}", self.patch_jobset),
                web.delete(JOBSETS_PATH + "/{name}", self.delete_jobset),
                web.get(PODS_PATH, self.list_pods),
                web.get(PODS_PATH + "/{name}", self.get_pod),
                web.get(PODS_PATH + "/{name}/log", self.pod_log),
                web.get(EVENTS_PATH, self.list_events),
                *kueue_routes(self, self.kueue),
            ]
        )
        return app

    # plumbing ------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        streaming = flag(request, "watch") or flag(request, "follow")
        record = dict(
            at=time.monotonic(),
            method=request.method,
            path=request.path,
            query=request.query_string,
            watch=streaming,
        )
        auth = request.headers.get("Authorization", "")
        if request.path != "/token" and auth.removeprefix("Bearer ").strip() not in self.tokens:
            self.requests.append(Request(**record, status=401))
            return status(401, "Unauthorized", "Unauthorized")
        access = Access.of(request.method, request.path, flag(request, "watch"))
        if access is not None and self.role is not None and not self.role.check(access):
            self.requests.append(Request(**record, status=403))
            return forbidden(access)
        faults = self.faults
        if faults.latency:
            await asyncio.sleep(random.uniform(0, faults.latency))
        fault = faults.pick(request)
        if fault == "lost" and streaming:
            fault = "reset"
        self.requests.append(Request(**record, status=fault or "ok"))
        if faults.hold and faults.only(request):
            await asyncio.sleep(faults.hold)
        if fault == "reset":
            return _reset(request)
        if isinstance(fault, int):
            response = status(fault, _REASONS[fault], "injected fault")
            if fault in (429, 503):
                response.headers["Retry-After"] = str(faults.retry_after)
            return response
        response = await handler(request)
        if fault == "lost":
            return _reset(request)
        return response

    async def token(self, request: web.Request) -> web.Response:
        """A Google OAuth token endpoint, as a service account key's ``token_uri`` sees it:
        every JWT-bearer grant gets a new access token, valid for an hour."""
        form = await request.post()
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        token = f"minted-{len(self.minted)}"
        self.minted.append(token)
        self.tokens.add(token)
        return web.json_response(
            {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}
        )

    async def version(self, request: web.Request) -> web.Response:
        return web.json_response({"major": "1", "minor": "31", "gitVersion": "v1.31.0-emulator"})

    # JobSets -------------------------------------------------------------------------------

    async def create_jobset(self, request: web.Request) -> web.Response:
        namespace = request.match_info["namespace"]
        body = await request.json()
        name = (body.get("metadata") or {}).get("name")
        if errors := self.validate(body):
            return status(
                422, "Invalid", f'JobSet.jobset.x-k8s.io "{name}" is invalid: ' + "; ".join(errors)
            )
        if body["metadata"].get("namespace", namespace) != namespace:
            return status(400, "BadRequest", "the namespace of the object does not match")
        body["metadata"]["namespace"] = namespace
        if self.store.get(JOBSET, namespace, name) is not None:
            return status(409, "AlreadyExists", f'jobsets.jobset.x-k8s.io "{name}" already exists')
        self.submitted.append(body)  # as sent; stored as the real server stores it
        created = self.store.create(JOBSET, {**defaulted_jobset(body), "status": {}})
        self.controller.started(created)
        self.kueue.jobset_created(created)
        return web.json_response(created, status=201)

    async def get_jobset(self, request: web.Request) -> web.Response:
        return self._get(request, JOBSET)

    async def list_jobsets(self, request: web.Request) -> web.StreamResponse:
        return await self._list(request, JOBSET, "jobset.x-k8s.io/v1alpha2", "JobSetList")

    async def patch_jobset(self, request: web.Request) -> web.Response:
        """A JSON merge patch (RFC 7386) of metadata labels and annotations. As on the API
        server, a ``metadata.resourceVersion`` in the patch is a precondition: 409 Conflict
        if the object has changed since, so a read-check-patch is one atomic step."""
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        if request.content_type != "application/merge-patch+json":
            return status(415, "UnsupportedMediaType", f"{request.content_type} is not served")
        patch = await request.json()
        current = self.store.get(JOBSET, namespace, name)
        if current is None:
            return _not_found(JOBSET, name)
        meta = patch.get("metadata") or {}
        if set(patch) - {"metadata"} or set(meta) - {
            "labels",
            "annotations",
            "resourceVersion",
            "uid",
        }:
            return status(422, "Invalid", "the emulator patches metadata labels/annotations only")
        if meta.get("uid") not in (None, current["metadata"]["uid"]):
            return status(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {meta['uid']}, "
                f"UID in object meta: {current['metadata']['uid']}",
            )
        expected = meta.get("resourceVersion")
        if expected is not None and expected != current["metadata"]["resourceVersion"]:
            return status(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on jobsets.jobset.x-k8s.io "{name}": the object '
                "has been modified; please apply your changes to the latest version and try again",
            )
        for key in ("labels", "annotations"):
            merged = {**(current["metadata"].get(key) or {}), **(meta.get(key) or {})}
            current["metadata"][key] = {k: v for k, v in merged.items() if v is not None}
        return web.json_response(self.store.update(JOBSET, current))

    async def delete_jobset(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        options = {}
        if request.can_read_body:
            options = json.loads(await request.text() or "{}")
        policy = request.query.get("propagationPolicy") or options.get("propagationPolicy")
        current = self.store.get(JOBSET, namespace, name)
        if current is None:
            return _not_found(JOBSET, name)
        expected = (options.get("preconditions") or {}).get("uid")
        if expected and expected != current["metadata"]["uid"]:
            return status(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {expected}, "
                f"UID in object meta: {current['metadata']['uid']}",
            )
        gone = await self.controller.delete(namespace, name, policy or "Background")
        return web.json_response(gone)

    # Pods ----------------------------------------------------------------------------------

    async def get_pod(self, request: web.Request) -> web.Response:
        return self._get(request, POD)

    async def list_pods(self, request: web.Request) -> web.StreamResponse:
        return await self._list(request, POD, "v1", "PodList")

    async def list_events(self, request: web.Request) -> web.StreamResponse:
        return await self._list(request, "events", "v1", "EventList")

    async def pod_log(self, request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        pod = self.controller.pods.get((namespace, name))
        if pod is None or self.store.get(POD, namespace, name) is None:
            return _not_found(POD, name)
        query = request.query
        timestamps = flag(request, "timestamps")
        tail = int(query["tailLines"]) if "tailLines" in query else None
        limit = int(query["limitBytes"]) if "limitBytes" in query else None
        since = float(query["sinceSeconds"]) if "sinceSeconds" in query else None

        def render(lines: list[tuple[str, str]]) -> bytes:
            return "".join(
                f"{ts} {line}\n" if timestamps else f"{line}\n" for ts, line in lines
            ).encode()

        lines = pod.log[-tail:] if tail else list(pod.log)
        if since is not None:
            cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - since))
            lines = [(ts, line) for ts, line in lines if ts >= cutoff]
        if not flag(request, "follow"):
            data = render(lines)
            return web.Response(body=data[:limit] if limit else data, content_type="text/plain")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        seen = len(pod.log)
        await response.write(render(lines))
        task = asyncio.current_task()
        assert task is not None
        self.streams.add(task)
        try:
            while not (pod.exit is not None and seen >= len(pod.log)):
                await pod.wait_for_log(seen)
                await response.write(render(pod.log[seen:]))
                seen = len(pod.log)
                if (namespace, name) not in self.controller.pods:
                    break
        except ConnectionResetError:  # the client hung up
            pass
        finally:
            self.streams.discard(task)
        return response

    # shared --------------------------------------------------------------------------------

    def _get(self, request: web.Request, kind: str) -> web.Response:
        name = request.match_info["name"]
        obj = self.store.get(kind, request.match_info["namespace"], name)
        return web.json_response(obj) if obj is not None else _not_found(kind, name)

    async def _list(
        self, request: web.Request, kind: str, api_version: str, list_kind: str
    ) -> web.StreamResponse:
        namespace = request.match_info["namespace"]
        try:
            selector = parse_selector(request.query.get("labelSelector"))
        except ValueError as err:
            return status(400, "BadRequest", str(err))
        if flag(request, "watch"):
            return await self._watch(request, kind, namespace, selector)
        # Pages as the API server serves them: ``limit`` objects, then a ``continue`` token
        # for the rest (here the list's version and the last name), 410 once compacted.
        limit = int(request.query.get("limit") or 0)
        listed, after = None, ""
        if token := request.query.get("continue"):
            version, _, after = base64.urlsafe_b64decode(token).decode().partition(":")
            listed = int(version)
            if listed < self.store.compacted:
                return status(410, "Expired", "the provided continue parameter is too old")
        items, rv = self.store.list(
            kind, namespace, selector, after=after, limit=limit + 1 if limit else 0
        )
        rv = listed if listed is not None else rv
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            items = items[:limit]
            last = items[-1]["metadata"]["name"]
            meta["continue"] = base64.urlsafe_b64encode(f"{rv}:{last}".encode()).decode()
        items = [obj for obj in items if fields_match(request.query.get("fieldSelector"), obj)]
        return web.json_response(
            {"apiVersion": api_version, "kind": list_kind, "metadata": meta, "items": items}
        )

    async def _watch(
        self, request: web.Request, kind: str, namespace: str, selector: Any
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            watcher = self.store.watch(
                kind, namespace, selector, request.query.get("resourceVersion")
            )
        except Expired as err:
            await _send(response, "ERROR", _status_body(410, "Expired", str(err)))
            return response
        timeout = float(request.query.get("timeoutSeconds", 1800))
        if self.faults.drop_watch_after:
            timeout = min(timeout, random.uniform(0.5, 1.0) * self.faults.drop_watch_after)
        bookmarks = flag(request, "allowWatchBookmarks")
        deadline = time.monotonic() + timeout
        task = asyncio.current_task()
        assert task is not None
        self.streams.add(task)
        self.watches.add(task)
        try:
            while (left := deadline - time.monotonic()) > 0:
                try:
                    event = await asyncio.wait_for(
                        watcher.queue.get(), min(left, self.bookmark_interval)
                    )
                except TimeoutError:
                    if bookmarks and deadline > time.monotonic():
                        await _send(response, "BOOKMARK", _bookmark(kind, self.store.rv))
                    continue
                await _send(response, event.type, event.obj)
        except ConnectionResetError:  # the client hung up
            pass
        finally:
            self.store.unwatch(watcher)
            self.streams.discard(task)
            self.watches.discard(task)
        if self.faults.drop_watch_after and random.random() < self.faults.expire_rate:
            self.store.compact()
        return response


__all__ = ["Api", "Faults", "Request", "status"]
