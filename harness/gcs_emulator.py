"""An in-process gcp-storage-emulator that behaves more like GCS where our tests need it.

On top of the stock emulator (which serves everything else):

* ``objects.list`` pages like GCS: at most ``max_page_size`` (GCS: 1,000) items plus prefixes
  per response, ``maxResults`` honoured, continued by ``nextPageToken``. The stock emulator
  ignores both, so paging code could never be exercised against it.
* Every request is recorded, so tests and ``bench/`` can count requests.
* A media download carries the object's ``x-goog-generation`` and ``x-goog-metageneration``
  headers, as GCS sends them. The stock emulator sends neither, and tensorstore (Orbax's OCDBT
  manifest) reads the generation of what it re-reads from that header: without it, a save
  that re-reads its manifest (a retry on a busy machine) fails with "Malformed
  StorageGeneration".
* Faults can be injected: HTTP errors for the next N matching requests, uploads of chosen
  object names rejected (a writer that dies right there), and one-shot actions run right after
  a matching request was answered (to race a deletion against a search).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from http import HTTPStatus
from http.server import HTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import buckets
from gcp_storage_emulator.server import RequestHandler
from gcp_storage_emulator.storage import Storage

_LIST_PATH = "/storage/v1/b/{bucket}/o"
_UPLOAD_PREFIX = "/upload/storage/v1/b/"
GCS_MAX_PAGE_SIZE = 1000


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, list[str]]

    @property
    def bucket(self) -> str | None:
        parts = self.path.split("/")
        return unquote(parts[parts.index("b") + 1]) if "b" in parts[:-1] else None

    @property
    def is_list(self) -> bool:
        return self.method == "GET" and self.path == _LIST_PATH.format(bucket=self.bucket)

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


Predicate = Callable[[RecordedRequest], bool]


@dataclass
class _Fault:
    status: int
    remaining: int
    matches: Predicate


@dataclass
class _AfterHook:
    matches: Predicate
    action: Callable[[], None]


@dataclass
class GcsEmulator:
    """Start with ``start()``; point clients at ``url``. Not thread-safe beyond one server."""

    max_page_size: int = GCS_MAX_PAGE_SIZE
    requests: list[RecordedRequest] = field(default_factory=list)
    _faults: list[_Fault] = field(default_factory=list)
    _hooks: list[_AfterHook] = field(default_factory=list)
    _rejected_uploads: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> GcsEmulator:
        logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
        self.storage = Storage(use_memory_fs=True)
        handler = partial(_Handler, self.storage, self)
        self._httpd = _QuietHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reset(self) -> None:
        """Forget recorded requests, faults and hooks (buckets and objects stay)."""
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self._hooks.clear()
            self._rejected_uploads.clear()

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # --- data ---------------------------------------------------------------------------------

    def create_bucket(self, name: str) -> None:
        buckets.create_bucket(name, self.storage)

    def drop_bucket(self, name: str) -> None:
        """Forget a bucket and its objects. Keeps the store small: the emulator rewrites its
        whole index as JSON on every upload."""
        with self._lock:
            self.storage.buckets.pop(name, None)
            self.storage.objects.pop(name, None)
            self.storage.soft_deleted.pop(name, None)
            self.storage._store.remove_tree(name)

    def object_names(self, bucket: str, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(n for n in self.storage.objects.get(bucket, {}) if n.startswith(prefix))

    def put_objects(self, bucket: str, objects: Iterable[tuple[str, bytes]]) -> None:
        """Insert objects straight into the emulator's store: 50,000 uploads would take minutes."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        store = self.storage._store
        with self._lock:
            bucket_objects = self.storage.objects.setdefault(bucket, {})
            for name, data in objects:
                generation = str(time.time_ns())
                store.write_bytes(f"{bucket}/{name}", data)
                bucket_objects[name] = {
                    "kind": "storage#object",
                    "id": f"{bucket}/{name}/{generation}",
                    "name": name,
                    "bucket": bucket,
                    "generation": generation,
                    "metageneration": "1",
                    "contentType": "application/octet-stream",
                    "timeCreated": now,
                    "updated": now,
                    "storageClass": "STANDARD",
                    "size": str(len(data)),
                }

    def updated(self, bucket: str, name: str) -> datetime:
        """The object's ``updated`` time, as the JSON API reports it."""
        with self._lock:
            value = self.storage.objects[bucket][name]["updated"]
        return datetime.fromisoformat(value)

    def copy_prefix(self, bucket: str, source: str, destination: str) -> None:
        """Copy every object under ``source`` to ``destination`` (both end with "/")."""
        names = self.object_names(bucket, source)
        store = self.storage._store
        self.put_objects(
            bucket,
            [(destination + n[len(source) :], store.read_bytes(f"{bucket}/{n}")) for n in names],
        )

    def delete_objects(self, bucket: str, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                self.storage.delete_file(bucket, name)

    # --- faults and hooks ---------------------------------------------------------------------

    def fail_next(self, status: int, times: int = 1, matches: Predicate | None = None) -> None:
        """Answer the next ``times`` matching requests with HTTP ``status``."""
        with self._lock:
            self._faults.append(_Fault(status, times, matches or (lambda _: True)))

    def reject_uploads(self, object_name: str, status: int = HTTPStatus.FORBIDDEN) -> None:
        """Refuse every upload of ``object_name`` (of every name under it, where it ends in
        ``/``), as if the writer died right before it."""
        with self._lock:
            self._rejected_uploads[object_name] = status

    def after(self, matches: Predicate, action: Callable[[], None]) -> None:
        """Run ``action`` once, right after the first matching request has been answered."""
        with self._lock:
            self._hooks.append(_AfterHook(matches, action))

    def list_requests(self, bucket: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_list and r.bucket == bucket]

    # --- used by the handler ------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> int | None:
        with self._lock:
            self.requests.append(request)
            for fault in self._faults:
                if fault.remaining > 0 and fault.matches(request):
                    fault.remaining -= 1
                    return fault.status
        return None

    def _rejected_status(self, request: RecordedRequest, body: bytes) -> int | None:
        with self._lock:
            for name, status in self._rejected_uploads.items():
                if name.endswith("/"):  # a folder: every object under it
                    opening = json.dumps(name)[:-1].encode()  # '"name' without its closing quote
                    if (request.param("name") or "").startswith(name) or opening in body:
                        return status
                elif request.param("name") == name or json.dumps(name).encode() in body:
                    return status
        return None

    def _run_hooks(self, request: RecordedRequest) -> None:
        with self._lock:
            due = [hook for hook in self._hooks if hook.matches(request)]
            self._hooks = [hook for hook in self._hooks if hook not in due]
        for hook in due:
            hook.action()


class _QuietHTTPServer(HTTPServer):
    # One request at a time, like the stock emulator; the backlog absorbs tensorstore's bursts
    # of parallel connections (with the default of 5 they get refused and retried after ~1 s).
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up early (gcsfs, tensorstore) are not errors worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(RequestHandler):
    """The emulator's handler, with paging, recording and fault injection in front."""

    def __init__(self, storage: Storage, emulator: GcsEmulator, *args: Any, **kwargs: Any):
        self.emulator = emulator
        super().__init__(storage, *args, **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self, method: str, default: Callable[[], None]) -> None:
        parts = urlsplit(self.path)
        request = self._request = RecordedRequest(method, parts.path, parse_qs(parts.query))
        status = self.emulator._record(request)
        if status is None and self.emulator._rejected_uploads and self._is_upload(request):
            status = self.emulator._rejected_status(request, self._buffer_body())
        if status is not None:
            self._send_json(status, {"error": {"code": status, "message": "injected fault"}})
        elif request.is_list:
            self._list(request)
        else:
            default()
        self.wfile.flush()
        self.emulator._run_hooks(request)

    def do_GET(self) -> None:
        self._serve("GET", super().do_GET)

    def do_POST(self) -> None:
        self._serve("POST", super().do_POST)

    def do_PUT(self) -> None:
        self._serve("PUT", super().do_PUT)

    def do_DELETE(self) -> None:
        self._serve("DELETE", super().do_DELETE)

    def do_PATCH(self) -> None:
        self._serve("PATCH", super().do_PATCH)

    def send_response(self, code: int, message: str | None = None) -> None:
        self._status = code
        super().send_response(code, message)

    def end_headers(self) -> None:
        request = getattr(self, "_request", None)
        if request is not None and getattr(self, "_status", 0) in (200, 206):
            for header, value in self._generation_headers(request).items():
                self.send_header(header, value)
        super().end_headers()

    def _generation_headers(self, request: RecordedRequest) -> dict[str, str]:
        """GCS's generation headers for a media download of an object; {} for anything else."""
        path = request.path.removeprefix("/download")
        if request.method != "GET" or request.param("alt") != "media" or "/o/" not in path:
            return {}
        bucket_part, _, name = path.partition("/o/")
        try:
            obj = self.storage.get_file_obj(bucket_part.rsplit("/", 1)[-1], unquote(name))
        except NotFound:
            return {}
        return {
            "x-goog-generation": str(obj.get("generation") or "1"),
            "x-goog-metageneration": str(obj.get("metageneration") or "1"),
        }

    @staticmethod
    def _is_upload(request: RecordedRequest) -> bool:
        return request.method in ("POST", "PUT") and (
            request.path.startswith(_UPLOAD_PREFIX) or request.path.count("/") >= 2
        )

    def _buffer_body(self) -> bytes:
        """Read the body (plain or chunked) and put it back for the emulator to parse."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = b""
            while size := int(self.rfile.readline().strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            del self.headers["Transfer-Encoding"]
            self.headers["Content-Length"] = str(len(body))
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.rfile = io.BytesIO(body)
        return body

    def _list(self, request: RecordedRequest) -> None:
        try:
            items, prefixes = self.storage.get_file_list(
                request.bucket,
                request.param("prefix"),
                request.param("delimiter"),
                request.param("matchGlob"),
            )
        except NotFound:
            self._send_json(404, {"error": {"code": 404, "message": "bucket not found"}})
            return
        # GCS pages over items and prefixes together, in name order.
        entries = sorted(
            [(item["name"], item) for item in items] + [(prefix, None) for prefix in prefixes],
            key=lambda entry: entry[0],
        )
        if token := request.param("pageToken"):
            after = base64.urlsafe_b64decode(token.encode()).decode()
            entries = [entry for entry in entries if entry[0] > after]
        size = min(
            int(request.param("maxResults") or GCS_MAX_PAGE_SIZE), self.emulator.max_page_size
        )
        page = entries[:size]
        body: dict[str, Any] = {
            "kind": "storage#objects",
            "items": [item for _, item in page if item is not None],
            "prefixes": [name for name, item in page if item is None],
        }
        if len(entries) > size:
            body["nextPageToken"] = base64.urlsafe_b64encode(page[-1][0].encode()).decode()
        self._send_json(200, body)

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        content = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)
