"""Pytest fixtures: the GCS emulator (with the env Orbax and Airflow need) and a fresh bucket."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from harness.gcs_emulator import GCS_MAX_PAGE_SIZE, GcsEmulator

ANONYMOUS_GCP_CONNECTION = json.dumps(
    {"conn_type": "google_cloud_platform", "extra": {"is_anonymous": True}}
)


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[GcsEmulator]:
    emulator = GcsEmulator().start()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STORAGE_EMULATOR_HOST", emulator.url)
        env.setenv("TENSORSTORE_GCS_HTTP_URL", emulator.url)
        # Otherwise gcsfs probes the bucket over gRPC and stalls for 60 s.
        env.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
        env.setenv("AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT", ANONYMOUS_GCP_CONNECTION)
        yield emulator
    emulator.stop()


@pytest.fixture
def gcs_bucket(gcs_emulator: GcsEmulator) -> Iterator[str]:
    """A new, empty bucket; faults, hooks, recorded requests and page size start clean."""
    gcs_emulator.reset()
    name = f"ckpt-{uuid.uuid4().hex[:12]}"
    gcs_emulator.create_bucket(name)
    yield name
    gcs_emulator.drop_bucket(name)
    gcs_emulator.reset()
    gcs_emulator.max_page_size = GCS_MAX_PAGE_SIZE
