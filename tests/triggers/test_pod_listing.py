"""One pod listing for the trigger's helpers that look at the same moment, against the
emulator's API server."""

from __future__ import annotations

import asyncio

from airflow_provider_jax.cluster import KubernetesCluster
from airflow_provider_jax.triggers.pod_listing import SharedPodList


def pod_lists(k8s) -> int:
    return sum(1 for r in k8s.requests if r.path.endswith("/pods") and not r.watch)


async def test_readers_at_the_same_moment_share_one_request_until_the_jobset_changes(k8s):
    pods = SharedPodList(KubernetesCluster().async_hook(), fresh_for=30)
    before = pod_lists(k8s)
    listings = await asyncio.gather(*(pods.list_jobset_pods("t-1", "default") for _ in range(3)))
    assert listings == [[], [], []]
    await pods.list_jobset_pods("t-1", "default")  # just after: still fresh
    assert pod_lists(k8s) == before + 1
    pods.changed()  # a reader that heard of a change never gets pods from before it
    await pods.list_jobset_pods("t-1", "default")
    assert pod_lists(k8s) == before + 2


async def test_a_listing_goes_stale_after_fresh_for(k8s):
    pods = SharedPodList(KubernetesCluster().async_hook(), fresh_for=0.1)
    before = pod_lists(k8s)
    await pods.list_jobset_pods("t-1", "default")
    await asyncio.sleep(0.2)
    await pods.list_jobset_pods("t-1", "default")
    assert pod_lists(k8s) == before + 2
