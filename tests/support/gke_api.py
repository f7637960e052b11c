"""Google's GKE API, as far as a GKE-mode task uses it: ``ClusterManager.GetCluster``, which the
google provider's ``GKEHook.get_cluster`` calls to find a cluster's endpoint and CA.

The real client reaches it unchanged: gRPC over TLS to ``container.googleapis.com:443``, through
an HTTP CONNECT proxy (``grpc_proxy``, which gRPC honours) that tunnels that one host to a local
gRPC server, whose self-signed certificate for that name the client trusts through
``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``. Like the real API it wants a Google bearer credential
(the generated client sends a JWT that the service account's key signed itself), answers
``NOT_FOUND`` for a cluster it does not know, and returns the cluster's public endpoint, private
endpoint and base64 cluster CA (``google.container.v1.Cluster``).
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.certificates import self_signed

HOST = "container.googleapis.com"
SERVICE = "google.container.v1.ClusterManager"


def cluster_path(project: str, location: str, name: str) -> str:
    """A cluster's resource name, as ``GetCluster`` is asked for it."""
    return f"projects/{project}/locations/{location}/clusters/{name}"


@dataclass(frozen=True)
class GkeCluster:
    """A cluster the API knows: its API server's ``host:port`` and CA (PEM)."""

    endpoint: str
    ca_pem: bytes


class GkeApi:
    """``GetCluster`` over gRPC on a free port, behind a CONNECT proxy for :data:`HOST`.

    :param directory: where its certificate goes.
    :param accepts: whether a bearer token is one Google issued.
    """

    def __init__(self, directory: Path, accepts: Callable[[str], bool]) -> None:
        import grpc

        self.accepts = accepts
        self.clusters: dict[str, GkeCluster] = {}  # by cluster_path()
        self.calls: list[tuple[str, str]] = []  # (cluster name, bearer token) per GetCluster
        self.tunnels: list[str] = []  # CONNECT targets
        self.ca_file, key_file = self_signed(directory, "container-googleapis", dns=HOST)
        cert = self.ca_file.read_bytes()
        method = grpc.unary_unary_rpc_method_handler(self._get_cluster)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {"GetCluster": method}),)
        )
        credentials = grpc.ssl_server_credentials([(key_file.read_bytes(), cert)])
        self._grpc_port = self._server.add_secure_port("127.0.0.1:0", credentials)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="gke-api", daemon=True)
        self._proxy: asyncio.Server | None = None
        self.proxy_url = ""

    def add(self, project: str, location: str, name: str, cluster: GkeCluster) -> None:
        self.clusters[cluster_path(project, location, name)] = cluster

    @property
    def env(self) -> dict[str, str]:
        """What makes a process's gRPC clients reach this API for :data:`HOST`."""
        return {"grpc_proxy": self.proxy_url, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(self.ca_file)}

    def start(self) -> GkeApi:
        self._server.start()
        self._thread.start()
        serving = asyncio.start_server(self._tunnel, "127.0.0.1", 0)
        self._proxy = asyncio.run_coroutine_threadsafe(serving, self._loop).result(10)
        self.proxy_url = f"http://127.0.0.1:{self._proxy.sockets[0].getsockname()[1]}"
        return self

    def stop(self) -> None:
        self._server.stop(grace=None)
        if self._proxy is not None:
            # On its own loop: asyncio.Server is not thread-safe, and a tunnel that ends as it
            # closes would wake its waiters twice (seen in a full run: TypeError in _wakeup).
            asyncio.run_coroutine_threadsafe(self._close_proxy(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _close_proxy(self) -> None:
        assert self._proxy is not None
        self._proxy.close()

    def _get_cluster(self, request: bytes, context: Any) -> bytes:
        import grpc
        from google.cloud.container_v1.types import Cluster, GetClusterRequest

        name = GetClusterRequest.deserialize(request).name
        auth = dict(context.invocation_metadata()).get("authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        self.calls.append((name, token))
        if not self.accepts(token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "Request had invalid credentials.")
        if (known := self.clusters.get(name)) is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"Not found: {name}.")
        cluster = Cluster(
            name=name.rsplit("/", 1)[1],
            location=name.split("/")[3],
            endpoint=known.endpoint,
            status=Cluster.Status.RUNNING,
        )
        cluster.master_auth.cluster_ca_certificate = base64.b64encode(known.ca_pem).decode()
        cluster.private_cluster_config.private_endpoint = known.endpoint
        return Cluster.serialize(cluster)

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One CONNECT: to :data:`HOST` only (nothing else leaves through this proxy)."""
        request = await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass  # the request's headers
        method, target = [*request.split(), b"", b""][:2]
        self.tunnels.append(target.decode(errors="replace"))
        if method != b"CONNECT" or target != f"{HOST}:443".encode():
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._grpc_port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()
