"""The in-process GCS emulator the storage benchmarks count requests on, with the env that
points Google's clients (and an anonymous Airflow connection) at it."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def bench_airflow_home() -> None:
    """A throwaway AIRFLOW_HOME, unless one is set, logging warnings only: the report is the
    bench's table, not the info line every poke and watcher logs (hundreds of them)."""
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="airflow-jax-bench-"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")


@contextmanager
def emulated_gcs() -> Iterator[Any]:
    from harness.gcs_emulator import GcsEmulator

    emulator = GcsEmulator().start()
    os.environ["STORAGE_EMULATOR_HOST"] = emulator.url
    os.environ["AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT"] = json.dumps(
        {"conn_type": "google_cloud_platform", "extra": {"is_anonymous": True}}
    )
    try:
        yield emulator
    finally:
        emulator.stop()
