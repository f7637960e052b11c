"""Kueue's visibility API: where a pending Workload stands in its LocalQueue.

``GET /apis/visibility.kueue.x-k8s.io/<v>/namespaces/<ns>/localqueues/<q>/pendingworkloads``
answers with every pending Workload of the queue and its position, so one call serves every
job waiting there (Kueue docs, "Pending workloads on-demand"). The identity needs ``get`` on
``localqueues/pendingworkloads`` in that group; the Role in ``docs/kubernetes.md`` grants it.
"""

from __future__ import annotations

import json
from typing import Any

from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations, raise_for_status
from airflow_provider_jax.hooks.resources import VISIBILITY_GROUP

PENDING_LIMIT = 1000  # Kueue's own default page: positions past it read as "beyond 1000"


async def pending_workloads(
    hook: AsyncJobSetOperations, namespace: str, queue: str, version: str
) -> list[dict[str, Any]]:
    """The LocalQueue's pending Workloads (``positionInLocalQueue`` counts from 0)."""
    path = (
        f"/apis/{VISIBILITY_GROUP}/{version}/namespaces/{{namespace}}/localqueues/{{name}}"
        "/pendingworkloads"
    )
    async with hook.api() as api:
        response = await api.call_api(
            path,
            "GET",
            path_params={"namespace": namespace, "name": queue},
            query_params=[("limit", PENDING_LIMIT)],
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        response = response[0] if isinstance(response, tuple) else response
        await raise_for_status(response)
        return json.loads(await response.read()).get("items") or []
