"""One ApiClient for a hook's overlapping calls, against the emulator."""

from __future__ import annotations

import asyncio
import contextlib

from airflow_provider_jax.cluster import KubernetesCluster
from airflow_provider_jax.hooks.shared_client import SharedApiClient


def counting(hook, opened: list) -> None:
    """Record every ApiClient the hook's own ``get_conn`` builds."""
    get_conn = hook.get_conn

    @contextlib.asynccontextmanager
    async def recorded():
        async with get_conn() as api:
            opened.append(api)
            yield api

    hook.get_conn = recorded


async def test_overlapping_calls_share_one_client_which_closes_after_them(k8s):
    hook = KubernetesCluster().async_hook()
    opened: list = []
    counting(hook, opened)
    found = await asyncio.gather(*(hook.get_jobset(f"job-{i}", "default") for i in range(20)))
    assert found == [None] * 20
    assert len(opened) == 1
    assert opened[0].rest_client.pool_manager.closed  # its last call ended
    await hook.get_jobset("later", "default")
    assert len(opened) == 2


async def test_calls_after_max_age_get_a_fresh_client(k8s):
    hook = KubernetesCluster().async_hook()
    opened: list = []
    counting(hook, opened)
    shared = SharedApiClient(hook.get_conn, max_age=0.2)
    async with shared() as first:
        await asyncio.sleep(0.3)
        async with shared() as second:
            assert second is not first  # a refreshed token or config applies from now on
        assert not first.rest_client.pool_manager.closed  # still in use
    assert first.rest_client.pool_manager.closed
    assert len(opened) == 2
