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
    shared = SharedApiClient(hook.get_conn, linger=0)
    found = await asyncio.gather(*(_get(shared, f"job-{i}") for i in range(20)))
    assert found == [404] * 20
    assert len(opened) == 1
    assert opened[0].rest_client.pool_manager.closed  # its last call ended
    await _get(shared, "later")
    assert len(opened) == 2


async def test_an_idle_client_lingers_for_the_next_calls_then_closes(k8s):
    hook = KubernetesCluster().async_hook()
    opened: list = []
    counting(hook, opened)
    await asyncio.gather(*(hook.get_jobset(f"job-{i}", "default") for i in range(5)))
    await hook.get_jobset("a moment later", "default")  # the hook's own: linger 30 s
    assert len(opened) == 1 and not opened[0].rest_client.pool_manager.closed
    shared = SharedApiClient(hook.get_conn, linger=0.2)
    await _get(shared, "one")
    await asyncio.sleep(0.05)
    await _get(shared, "two")  # within the linger: the same client, its connection reused
    assert len(opened) == 2
    await asyncio.sleep(0.4)
    assert opened[1].rest_client.pool_manager.closed
    await _get(shared, "three")
    assert len(opened) == 3


async def test_streams_get_another_client_when_one_has_no_connection_left(k8s):
    hook = KubernetesCluster().async_hook()
    opened: list = []
    counting(hook, opened)
    async with hook.get_conn():  # loads the connection's configuration
        pass
    hook.client_configuration.connection_pool_maxsize = 2
    opened.clear()
    streams = SharedApiClient(hook.get_conn, holds_connection=True, linger=0)
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(streams()) for _ in range(5)]
        assert len(opened) == 3  # 2 + 2 + 1: none waits for another's connection
        assert (
            clients[0] is clients[1] and clients[2] is clients[3] and clients[4] is not clients[0]
        )
    assert all(api.rest_client.pool_manager.closed for api in opened)


async def _get(shared: SharedApiClient, name: str) -> int:
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    async with shared() as api:
        try:
            await client.CustomObjectsApi(api).get_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", name
            )
        except ApiException as err:
            return err.status
    return 200


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
