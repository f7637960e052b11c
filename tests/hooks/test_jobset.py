"""JobSetHook and AsyncJobSetHook against the emulator, through the real kubernetes clients and
the ``kubernetes_default`` connection (a kubeconfig file, or a kubeconfig in the connection)."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.client.rest import RESTClientObject

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.jobset import JobSetExists
from airflow_provider_jax.hooks.resources import JOBSETS
from airflow_provider_jax.manifest import status
from harness.jobsets import disrupt_host, manifest, succeed
from harness.k8s_emulator import Emulator, Faults


@pytest.fixture
def hook(k8s: Emulator):
    return KubernetesCluster().hook()


def wait_terminal(hook, name: str) -> dict:
    deadline = time.monotonic() + 20
    while status.terminal_state(jobset := hook.get_jobset(name, "default")) is None:
        assert time.monotonic() < deadline, jobset
        time.sleep(0.05)
    return jobset


def test_create_get_and_delete_in_the_foreground(k8s, hook):
    k8s.script(succeed({"x": 1}))
    created = hook.create_jobset(manifest())
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    with pytest.raises(JobSetExists):
        hook.create_jobset(manifest())
    assert hook.get_jobset(name, "default")["metadata"]["uid"] == uid
    assert hook.get_jobset("nope", "default") is None
    assert status.terminal_state(wait_terminal(hook, name)) == "Completed"
    assert hook.delete_jobset(name, "default", uid="someone-else") is False  # uid precondition
    assert hook.delete_jobset(name, "default", uid=uid) is True
    hook.wait_until_gone(name, "default", uid)
    assert k8s.jobsets() == [] and k8s.pods() == []
    assert hook.delete_jobset(name, "default") is False
    assert k8s.controller.deletions == [(name, "Foreground")]


def test_leader_is_job_0_index_0_of_the_latest_restart(k8s, hook):
    k8s.script(disrupt_host(1, attempts=1))
    name = hook.create_jobset(manifest(max_restarts=1))["metadata"]["name"]
    assert wait_terminal(hook, name)["status"]["restarts"] == 1
    pods = hook.list_jobset_pods(name, "default")
    leader = status.leader_pod(pods)
    assert status.tag(leader) == "[0/0]" and status.restart_attempt(leader) == 1
    assert json.loads(status.termination_message(leader)) == {"ok": True}
    log = hook.read_pod_log(leader["metadata"]["name"], "default", tail_lines=1)
    assert log.count("\n") == 1 and '"step":1' in log


def test_kube_config_held_in_the_connection(k8s, monkeypatch):
    connection = {"conn_type": "kubernetes", "extra": {"kube_config": k8s.kubeconfig_dict()}}
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))
    assert KubernetesCluster().hook().get_jobset("nope", "default") is None


async def test_async_hook_lists_and_watches_from_a_resource_version(k8s, hook, monkeypatch):
    k8s.script(succeed(duration=0.2))
    async_hook = KubernetesCluster().async_hook()
    pages = [page async for page in async_hook.list_pages(JOBSETS, "v1alpha2", "default")]
    assert [items for items, _ in pages] == [[]]
    version = pages[0][1]
    name = hook.create_jobset(manifest())["metadata"]["name"]
    clients = []  # every ApiClient opened (each parses a CA store into an SSL context)
    opened = RESTClientObject.__init__
    monkeypatch.setattr(
        RESTClientObject, "__init__", lambda self, *a, **kw: clients.append(opened(self, *a, **kw))
    )
    seen = []
    async for kind, obj in async_hook.watch_objects(
        JOBSETS, "v1alpha2", "default", version, timeout_seconds=2
    ):
        seen.append(kind)
        if status.terminal_state(obj):
            break
    assert seen[0] == "ADDED" and "MODIFIED" in seen
    assert len(clients) == 1  # the hook's shared client: the watch opens none of its own
    assert (await async_hook.get_jobset(name, "default"))["metadata"]["name"] == name


def test_transient_errors_are_retried_and_a_lost_create_reads_as_exists(k8s, hook):
    calls = iter(range(1000))
    k8s.faults = Faults(rate=1.0, kinds=(429, 503), retry_after=0, only=lambda r: next(calls) < 2)
    assert hook.get_jobset("nope", "default") is None  # after two faults
    posts = iter(range(1000))
    k8s.faults = Faults(
        rate=1.0, kinds=("lost",), only=lambda r: r.method == "POST" and not next(posts)
    )
    with pytest.raises(JobSetExists):  # it was created; the retry met it
        hook.create_jobset(manifest())
    assert len(k8s.submitted) == 1


async def test_an_async_call_is_tried_again_after_transient_errors_only(k8s, hook):
    """Its first try runs outside tenacity; a transient failure still gets the tries left."""
    async_hook = KubernetesCluster().async_hook()
    calls = iter(range(1000))
    k8s.faults = Faults(rate=1.0, kinds=(503,), retry_after=0, only=lambda r: next(calls) < 2)
    assert await async_hook.list_jobset_pods("nope", "default") == []  # the third try
    assert [r.status for r in k8s.requests if "/pods" in r.path] == [503, 503, "ok"]
    k8s.faults = Faults()
    before = len(k8s.requests)
    with pytest.raises(ApiException) as raised:  # 404 is an answer: not tried again
        await async_hook.read_pod_log_tail("nope", "default", 10)
    assert raised.value.status == 404 and len(k8s.requests) == before + 1


async def test_a_list_is_read_in_pages_of_kept_objects(k8s, hook):
    """A relist of thousands of JobSets is never whole in memory: it comes page by page, each
    JobSet cut to what the triggers read before the next page is asked for."""
    names = [f"page-{i}-0123456789" for i in range(5)]
    for name in names:
        hook.create_jobset(manifest(name))
    listed_at = k8s.store.rv
    async_hook = KubernetesCluster().async_hook()
    pages = [
        page async for page in async_hook.list_pages(JOBSETS, "v1alpha2", "default", page_size=2)
    ]
    assert [[obj["metadata"]["name"] for obj in items] for items, _ in pages] == [
        names[:2],
        names[2:4],
        names[4:],
    ]
    items = [obj for page, _ in pages for obj in page]
    version = pages[0][1]
    assert all('"env"' not in json.dumps(obj) for obj in items)  # no pod templates kept
    asked = [r for r in k8s.requests if r.method == "GET" and r.path.endswith("/jobsets")]
    assert len(asked) == 3 and all("limit=2" in r.query for r in asked)
    # One consistent list: every page at the first page's version, whatever came after.
    assert int(version) >= listed_at and {v for _, v in pages} == {version}
