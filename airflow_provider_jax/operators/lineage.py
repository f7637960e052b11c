"""OpenLineage for JAX tasks, when the OpenLineage provider is installed (nothing otherwise):
a task reads the checkpoints it was handed and writes its own under ``<output_dir>``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_jax.runtime.output_paths import checkpoints_uri
from airflow_provider_jax.runtime.stores import parse_location
from airflow_provider_jax.stores import store

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

# Arguments that name storage a task reads: a checkpoint handed over from an upstream (an
# asset event's payload, an XCom) or an upstream's output_dir.
_LOCATION_KEYS = ("path", "checkpoint_dir", "checkpoint_path", "output_dir", "input_dir")


def dataset_name(location: str) -> tuple[str, str]:
    """OpenLineage's naming, as the store's driver gives it: ``gs://bucket`` and the object
    path; ``file`` and the path."""
    where = parse_location(location)
    return store(where).dataset(where)


def _is_location(value: Any) -> bool:
    try:
        parse_location(value)
    except ValueError:
        return False
    return True


def input_locations(arguments: Any) -> Iterator[str]:
    """Storage named by the task's arguments, at any depth, under a key that names a place."""
    if isinstance(arguments, Mapping):
        for key, value in arguments.items():
            named = isinstance(key, str) and (key in _LOCATION_KEYS or key.endswith("_dir"))
            if named and _is_location(value):
                yield value
            else:
                yield from input_locations(value)
    elif isinstance(arguments, (list, tuple)):
        for value in arguments:
            yield from input_locations(value)


def lineage(output_dir: str | None, call_arguments: Mapping[str, Any]) -> OperatorLineage:
    """What a finished task read and wrote; the operator's
    ``get_openlineage_facets_on_complete``, which Airflow's listener calls after a success."""
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    outputs = []
    if output_dir:
        mine = checkpoints_uri(output_dir)
        outputs.append(Dataset(*dataset_name(mine)))
    own = output_dir.rstrip("/") if output_dir else None
    found = {
        location.rstrip("/")
        for location in input_locations(call_arguments)
        if own is None or not location.startswith(own)
    }
    # A step and its directory: the step is what was read.
    read = [p for p in found if not any(q.startswith(p + "/") for q in found)]
    return OperatorLineage(
        inputs=[Dataset(*dataset_name(location)) for location in sorted(read)],
        outputs=outputs,
    )
