"""A GCS emulator on 127.0.0.1 for the whole session (gcp-storage-emulator, in memory)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

BUCKET = "airflow-jax-test"


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[str]:
    """The emulator's URL; it holds one bucket, ``BUCKET``."""
    from gcp_storage_emulator.server import create_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def gcs_bucket(gcs_emulator: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``gs://BUCKET``, with STORAGE_EMULATOR_HOST set for this process and its children."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    return f"gs://{BUCKET}"
