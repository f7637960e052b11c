"""One ApiClient for a hook's overlapping calls, against the emulator."""

from __future__ import annotations

import asyncio
import contextlib

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.shared_client import SharedApiClient, pool_size


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


async def test_log_streams_share_clients_no_more_to_one_than_its_pool_holds(k8s):
    hook = KubernetesCluster().async_hook()
    opened: list = []
    counting(hook, opened)
    streams = SharedApiClient(hook.get_conn, holds_connection=True)
    async with contextlib.AsyncExitStack() as held:
        clients = [await held.enter_async_context(streams()) for _ in range(150)]
        (size,) = {pool_size(api) for api in opened}
        assert size == 100  # kubernetes_asyncio's default pool: 100 connections
        assert [clients.count(api) for api in opened] == [100, 50]
    assert all(api.rest_client.pool_manager.closed for api in opened)


def test_a_client_serves_only_the_event_loop_that_opened_it(k8s):
    hook = KubernetesCluster().async_hook()
    shared = SharedApiClient(hook.get_conn)
    held = shared()

    async def first_loop():
        return await held.__aenter__()  # still in use when its loop ends

    async def second_loop():
        async with shared() as api:
            assert await hook.get_jobset("absent", "default") is None
            return api

    first = asyncio.run(first_loop())
    assert asyncio.run(second_loop()) is not first  # a session bound to a closed loop hangs


async def test_environment_lookups_are_skipped_only_when_they_would_find_nothing(
    k8s, monkeypatch, tmp_path
):
    """aiohttp's per-request proxy and netrc lookups (a worker thread each) are skipped where
    the environment has neither for the API server; otherwise they stay, as before."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NETRC", raising=False)
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def trusts_env() -> bool:
        async with KubernetesCluster().async_hook().api() as api:
            return api.rest_client.pool_manager.trust_env

    assert not await trusts_env()
    assert await KubernetesCluster().async_hook().get_jobset("absent", "default") is None
    for name in ("HTTPS_PROXY", "HTTP_PROXY"):  # the emulator here speaks plain HTTP
        monkeypatch.setenv(name, "http://proxy.internal:3128")
    assert await trusts_env()  # a proxy that may apply: aiohttp decides per request
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert not await trusts_env()  # the API server is exempt
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name)
    (tmp_path / ".netrc").write_text("machine 127.0.0.1 login u password p\n")
    assert await trusts_env()
