"""Hooks for JobSets and their pods, on the cncf provider's Kubernetes hooks and connection.

Objects travel as the API server's own JSON (dicts), never as generated client models, so the
sync and async clients, the trigger and the operator all read them with the same helpers
(:mod:`airflow_provider_jax.manifest.status`).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio import watch as async_watch
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException
from kubernetes_asyncio.client.rest import RESTResponse

from airflow_provider_jax.hooks.api_errors import api_retry
from airflow_provider_jax.hooks.resources import Resource
from airflow_provider_jax.hooks.shared_client import SharedApiClient
from airflow_provider_jax.manifest.jobset_api import (
    COMPLETION_INDEX_ANNOTATION,
    GROUP,
    JOB_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    PLURAL,
    VERSION,
)
from airflow_provider_jax.manifest.provider_keys import CONTAINER_NAME

if TYPE_CHECKING:
    from aiohttp import ClientResponse

LOG_STREAM_TIMEOUT = (30, 600)  # s to connect; a log may sit idle 10 minutes before a reconnect
LIST_PAGE_SIZE = 500  # objects per page of a list, as client-go's reflector reads them


class JobSetExists(Exception):
    """Create found a JobSet of that name already there (HTTP 409)."""


def _delete_options(uid: str | None) -> dict[str, Any]:
    # Foreground: the JobSet stays visible until its Jobs and pods are gone, so "gone" means
    # nothing is left running. The uid precondition keeps a late delete off a newer JobSet.
    body: dict[str, Any] = {"propagationPolicy": "Foreground"}
    if uid:
        body["preconditions"] = {"uid": uid}
    return body


def _async_delete_options(uid: str | None) -> async_client.V1DeleteOptions:
    """:func:`_delete_options` as kubernetes_asyncio's model (the same JSON on the wire)."""
    preconditions = async_client.V1Preconditions(uid=uid) if uid else None
    return async_client.V1DeleteOptions(
        propagation_policy="Foreground", preconditions=preconditions
    )


def _raw(response: object) -> ClientResponse:
    """With ``_preload_content=False`` kubernetes_asyncio hands back aiohttp's response,
    not the model its signature names."""
    return cast("ClientResponse", response)


def pods_selector(name: str, leader_only: bool = False) -> str:
    """A JobSet's pods; with ``leader_only``, those at job index 0, completion index 0: one
    per restart attempt (Kubernetes 1.28+ labels the completion index; before, none match)."""
    selector = f"{JOBSET_NAME_LABEL}={name}"
    if leader_only:
        selector += f",{JOB_INDEX_LABEL}=0,{COMPLETION_INDEX_ANNOTATION}=0"
    return selector


class JobSetOperations:
    """JobSet calls for any hook that has ``custom_object_client`` and ``core_v1_client``."""

    custom_object_client: client.CustomObjectsApi
    core_v1_client: client.CoreV1Api

    def create_jobset(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Submit ``manifest``; raises :class:`JobSetExists` if the name is taken.

        A create whose reply was lost is retried like any other call; the retry then meets
        its own JobSet as a 409, which the caller sees as "exists" and inspects.
        """
        namespace = manifest["metadata"]["namespace"]

        @api_retry()
        def create() -> dict[str, Any]:
            return self.custom_object_client.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, dict(manifest)
            )

        try:
            return create()
        except ApiException as err:
            if err.status == 409:
                raise JobSetExists(manifest["metadata"]["name"]) from err
            raise

    @api_retry()
    def get_jobset(self, name: str, namespace: str) -> dict[str, Any] | None:
        """The JobSet, or None if there is none of that name."""
        try:
            return self.custom_object_client.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    @api_retry()
    def delete_jobset(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Delete with Foreground propagation; False if it (or that ``uid``) was already gone."""
        try:
            self.custom_object_client.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, body=_delete_options(uid)
            )
        except ApiException as err:
            if err.status in (404, 409):  # gone, or the name now belongs to another uid
                return False
            raise
        return True

    @api_retry()
    def annotate_jobset(
        self, name: str, namespace: str, uid: str | None, annotations: Mapping[str, str]
    ) -> bool:
        """Merge ``annotations`` into JobSet ``uid``'s; False if that JobSet is gone."""
        metadata: dict[str, Any] = {"annotations": dict(annotations)}
        if uid:
            metadata["uid"] = uid  # a precondition: never annotate a successor
        try:
            self.custom_object_client.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, {"metadata": metadata}
            )
        except ApiException as err:
            if err.status in (404, 409):
                return False
            raise
        return True

    def wait_until_gone(
        self, name: str, namespace: str, uid: str | None, timeout: float = 600, interval: float = 1
    ) -> None:
        """Block until the JobSet ``uid`` (with its pods, under Foreground) no longer exists;
        TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while (current := self.get_jobset(name, namespace)) is not None:
            if uid and current["metadata"].get("uid") != uid:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"JobSet {namespace}/{name} is still being deleted after {timeout:.0f}s "
                    f"(deletionTimestamp {current['metadata'].get('deletionTimestamp')}, "
                    f"finalizers {current['metadata'].get('finalizers')}): are its pods stuck "
                    "terminating, or a finalizer's controller down?"
                )
            time.sleep(interval)

    @api_retry()
    def list_jobset_pods(self, name: str, namespace: str) -> list[dict[str, Any]]:
        response = self.core_v1_client.list_namespaced_pod(
            namespace, label_selector=pods_selector(name), _preload_content=False
        )
        return json.loads(response.data)["items"]

    @api_retry()
    def read_pod_log(
        self,
        pod_name: str,
        namespace: str,
        *,
        container: str = CONTAINER_NAME,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
    ) -> str:
        """A container's log (its tail, if asked), decoded leniently; "" if the pod is gone."""
        kwargs: dict[str, Any] = {"container": container, "_preload_content": False}
        if tail_lines is not None:
            kwargs["tail_lines"] = tail_lines
        if limit_bytes is not None:
            kwargs["limit_bytes"] = limit_bytes
        try:
            response = self.core_v1_client.read_namespaced_pod_log(pod_name, namespace, **kwargs)
        except ApiException as err:
            if err.status in (400, 404):  # not started yet, or gone
                return ""
            raise
        return response.data.decode("utf-8", errors="replace")


class JobSetHook(JobSetOperations, KubernetesHook):
    """Create, read, delete and inspect JobSets on a ``kubernetes`` connection (in-cluster,
    kubeconfig file, or kubeconfig in the connection)."""

    hook_name = "JobSet (Kubernetes)"


class AsyncJobSetOperations:
    """Async JobSet calls for any hook whose ``get_conn()`` yields an async ``ApiClient``.

    Calls share one client while they overlap (:class:`SharedApiClient`). Log streams, each
    holding a connection for as long as its pod runs, share clients of their own, no more
    streams to a client than its pool has connections, so a stream never queues for one.
    """

    get_conn: Any

    @functools.cached_property
    def api(self) -> SharedApiClient:
        return SharedApiClient(self.get_conn)

    @functools.cached_property
    def streams(self) -> SharedApiClient:
        return SharedApiClient(self.get_conn, holds_connection=True)

    @api_retry()
    async def get_jobset(self, name: str, namespace: str) -> dict[str, Any] | None:
        async with self.api() as api:
            try:
                return await async_client.CustomObjectsApi(api).get_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, name
                )
            except AsyncApiException as err:
                if err.status == 404:
                    return None
                raise

    @api_retry()
    async def delete_jobset(self, name: str, namespace: str, uid: str | None = None) -> bool:
        async with self.api() as api:
            try:
                await async_client.CustomObjectsApi(api).delete_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, name, body=_async_delete_options(uid)
                )
            except AsyncApiException as err:
                if err.status in (404, 409):
                    return False
                raise
        return True

    async def list_pages(
        self,
        resource: Resource,
        version: str,
        namespace: str,
        label_selector: str = "",
        *,
        page_size: int | None = None,
    ) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        """(items, resourceVersion) of each page of one consistent list, items as the resource
        keeps them (``Resource.trim``): 10,000 whole JobSets are never parsed at once. Not
        retried: the caller decides (an expired token is a 410)."""
        token: str | None = None
        async with self.api() as api:
            custom = async_client.CustomObjectsApi(api)
            while True:
                after: dict[str, Any] = {"_continue": token} if token else {}  # first: none
                page = await custom.list_namespaced_custom_object(
                    resource.group,
                    version,
                    namespace,
                    resource.plural,
                    label_selector=label_selector,
                    limit=page_size or LIST_PAGE_SIZE,
                    **after,
                )
                items = [resource.trim(obj) for obj in page.pop("items")]
                token = page["metadata"].get("continue")
                yield items, page["metadata"]["resourceVersion"]
                if not token:
                    return

    async def watch_objects(
        self,
        resource: Resource,
        version: str,
        namespace: str,
        resource_version: str,
        *,
        label_selector: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(type, object) events after ``resource_version``, BOOKMARKs included, until the
        server ends the watch. A 410 (history compacted) raises; the caller re-lists."""
        async with self.api() as api:
            custom = async_client.CustomObjectsApi(api)
            stream = _RawWatch().stream(
                custom.list_namespaced_custom_object,
                resource.group,
                version,
                namespace,
                resource.plural,
                label_selector=label_selector,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds,
            )
            async with stream:
                async for event in stream:
                    yield event["type"], event["raw_object"]

    @api_retry()
    async def list_jobset_pods(
        self, name: str, namespace: str, *, leader_only: bool = False
    ) -> list[dict[str, Any]]:
        """The JobSet's pods, or with ``leader_only`` (see :func:`pods_selector`) its leaders."""
        async with self.api() as api:
            response = _raw(
                await async_client.CoreV1Api(api).list_namespaced_pod(
                    namespace,
                    label_selector=pods_selector(name, leader_only),
                    _preload_content=False,
                )
            )
            await raise_for_status(response)
            return json.loads(await response.read())["items"]

    @api_retry()
    async def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]:
        """The cluster's Nodes with these labels (cluster-scoped: a ClusterRole's ``list``)."""
        async with self.api() as api:
            response = _raw(
                await async_client.CoreV1Api(api).list_node(
                    label_selector=label_selector, _preload_content=False
                )
            )
            await raise_for_status(response)
            return json.loads(await response.read())["items"]

    @api_retry()
    async def list_events(self, namespace: str, reason: str) -> list[dict[str, Any]]:
        """The namespace's Events with this ``reason`` (a field the API server selects on)."""
        async with self.api() as api:
            response = _raw(
                await async_client.CoreV1Api(api).list_namespaced_event(
                    namespace, field_selector=f"reason={reason}", _preload_content=False
                )
            )
            await raise_for_status(response)
            return json.loads(await response.read())["items"]

    @api_retry()
    async def read_pod_log_tail(
        self, pod_name: str, namespace: str, lines: int, *, container: str = CONTAINER_NAME
    ) -> list[str]:
        """The last ``lines`` lines of a container's log (with RFC 3339 timestamps) in one
        request through the shared client: a log read once, at its end, holds no connection."""
        async with self.api() as api:
            response = _raw(
                await async_client.CoreV1Api(api).read_namespaced_pod_log(
                    pod_name,
                    namespace,
                    container=container,
                    timestamps=True,
                    tail_lines=lines,
                    _preload_content=False,
                )
            )
            await raise_for_status(response)
            return (await response.read()).decode("utf-8", errors="replace").splitlines()

    async def follow_pod_log(
        self,
        pod_name: str,
        namespace: str,
        *,
        container: str = CONTAINER_NAME,
        since_seconds: int | None = None,
        on_open: Callable[[], None] = lambda: None,
    ) -> AsyncIterator[str]:
        """Lines of a running container's log (with RFC 3339 timestamps) as they come;
        ``on_open()`` once the server has answered."""
        kwargs: dict[str, Any] = {
            "container": container,
            "follow": True,
            "timestamps": True,
            "_preload_content": False,
            "_request_timeout": LOG_STREAM_TIMEOUT,
        }
        if since_seconds is not None:
            kwargs["since_seconds"] = since_seconds
        async with self.streams() as api:
            response = _raw(
                await async_client.CoreV1Api(api).read_namespaced_pod_log(
                    pod_name, namespace, **kwargs
                )
            )
            on_open()
            await raise_for_status(response)
            try:
                async for raw in response.content:
                    yield raw.decode("utf-8", errors="replace").rstrip("\n")
            finally:
                response.release()


class _RawWatch(async_watch.Watch):
    """Events as the API server sent them, each parsed once (the stock ``Watch`` parses, dumps
    and parses again into a model: three passes), through the hook's shared client."""

    def __init__(self) -> None:
        # Not the stock one's: it opens a default ApiClient per watch (an SSL context over
        # the system's CA store, tens of milliseconds) only to build the models we skip.
        self._raw_return_type = None
        self._stop = False
        self.resource_version = None
        self.resp = None

    def get_return_type(self, func: Any) -> str:
        return ""  # no model (falsy, as None): the event's ``raw_object`` is all we read

    async def close(self) -> None:
        if self.resp is not None:
            self.resp.release()
            self.resp = None


async def raise_for_status(response: Any) -> None:
    """What kubernetes_asyncio skips with ``_preload_content=False``: an error status raises
    :class:`ApiException`, instead of its Status body being read as data (or log lines)."""
    if 200 <= response.status <= 299:
        return
    data = await response.read()
    response.release()
    raise AsyncApiException(http_resp=cast(Any, RESTResponse(response, data)))


class AsyncJobSetHook(AsyncJobSetOperations, AsyncKubernetesHook):
    """The async twin of :class:`JobSetHook`, for triggers."""
