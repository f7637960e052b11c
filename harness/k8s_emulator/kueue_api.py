"""The HTTP face of the emulator's Kueue: Workloads (get, list, watch) at the versions it
serves, and the visibility API's pending workloads of a LocalQueue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from harness.k8s_emulator.kueue import Kueue
from harness.k8s_emulator.kueue_objects import WORKLOAD

if TYPE_CHECKING:
    from harness.k8s_emulator.api import Api

WORKLOADS_PATH = "/apis/kueue.x-k8s.io/{version}/namespaces/{namespace}/workloads"
PENDING_PATH = (
    "/apis/visibility.kueue.x-k8s.io/{version}/namespaces/{namespace}/localqueues/{name}"
    "/pendingworkloads"
)
VISIBILITY_VERSIONS = ("v1beta1", "v1beta2")


def kueue_routes(api: Api, kueue: Kueue) -> list[web.RouteDef]:
    from harness.k8s_emulator.api import status

    def served(request: web.Request) -> web.Response | None:
        version = request.match_info["version"]
        if kueue.installed and version in kueue.versions:
            return None
        return status(404, "NotFound", "the server could not find the requested resource")

    async def list_workloads(request: web.Request) -> web.StreamResponse:
        version = request.match_info["version"]
        if (missing := served(request)) is not None:
            return missing
        return await api._list(request, WORKLOAD, f"kueue.x-k8s.io/{version}", "WorkloadList")

    async def get_workload(request: web.Request) -> web.StreamResponse:
        return served(request) or api._get(request, WORKLOAD)

    async def pending(request: web.Request) -> web.Response:
        version, namespace = request.match_info["version"], request.match_info["namespace"]
        name = request.match_info["name"]
        items = kueue.pending_workloads(namespace, name) if kueue.installed else None
        if version not in VISIBILITY_VERSIONS or items is None:
            return status(404, "NotFound", f'localqueues.kueue.x-k8s.io "{name}" not found')
        limit = int(request.query.get("limit", 1000))
        offset = int(request.query.get("offset", 0))
        return web.json_response(
            {
                "kind": "PendingWorkloadsSummary",
                "apiVersion": f"visibility.kueue.x-k8s.io/{version}",
                "metadata": {"name": name, "namespace": namespace},
                "items": items[offset : offset + limit],
            }
        )

    return [
        web.get(WORKLOADS_PATH, list_workloads),
        web.get(WORKLOADS_PATH + "/{name}", get_workload),
        web.get(PENDING_PATH, pending),
    ]
