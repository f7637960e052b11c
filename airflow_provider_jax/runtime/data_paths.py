"""Data inputs in the pod: each ``Data(...)`` argument arrives as a marker in the call's JSON
and becomes a plain ``str`` path before the user's function is called, as its store's driver
gives it. Stdlib only.

- a local folder (the local backend): its path, as given;
- ``gs://bucket/prefix/``: downloaded to this host's disk first, objects in parallel, with the
  size and time printed; ``STORAGE_EMULATOR_HOST`` points the download at an emulator;
- ``gs://...`` with ``fuse=True``: the GCS FUSE mount's path when the pod has the mount
  (GKE); where it has none (the local backend), downloaded as above.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.runtime.stores import parse_location, store_for

MARKER = "__airflow_jax_data__"  # {MARKER: {"uri": ..., "fuse": bool, "mount": path | None}}


def resolve(value: Any) -> Any:
    """``value`` with every Data marker replaced by its local path, at any depth."""
    if isinstance(value, dict):
        if set(value) == {MARKER}:
            return local_path(value[MARKER])
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v) for v in value]
    return value


def local_path(data: dict[str, Any]) -> str:
    location = parse_location(data["uri"], "Data")
    return store_for(location).data_path(location, data.get("mount"))
