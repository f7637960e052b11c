"""Where a task instance's files live under its ``output_dir``: one place, read by the pods'
runtime and by the Airflow side alike, so the two can never disagree on a path.

``output_dir`` is the same for every JobSet restart and every Airflow retry of a task
instance (keep ``try_number`` out of it): a retry resumes from the same checkpoints.
"""

from __future__ import annotations

from airflow_provider_jax.runtime.stores import parse_location

RESULT_FILE = "result.json"  # the leader's result, when it is too big for a termination message
UNRETURNABLE_FILE = "result.unreturnable.json"  # what could be kept of a result JSON can't carry
CHECKPOINTS = "checkpoints"  # Orbax's directory (runtime.checkpoint_dir())
PROFILES = "profiles"  # profile_steps' traces, by try and host (TensorBoard's layout below)
DEBUG = "debug"  # debug_dump's folders, by try and host


def join(base: str, name: str) -> str:
    """``base/name`` for a local path or a ``gs://`` URI, with one ``/`` between them."""
    return f"{base.rstrip('/')}/{name}"


def result_uri(output_dir: str) -> str:
    """``<output_dir>/result.json``: the only place a result is ever read from."""
    return join(output_dir, RESULT_FILE)


def unreturnable_uri(output_dir: str) -> str:
    """``<output_dir>/result.unreturnable.json``: a result JSON cannot carry, written with
    NaN as ``NaN`` and other objects as their ``repr``, so that a finished run's values are
    kept. Airflow never reads it."""
    return join(output_dir, UNRETURNABLE_FILE)


def checkpoints_uri(output_dir: str) -> str:
    """``<output_dir>/checkpoints``: one place for a task instance's checkpoints."""
    return join(output_dir, CHECKPOINTS)


def try_uri(output_dir: str, kind: str, try_number: int) -> str:
    """``<output_dir>/<kind>/try-<n>``: one Airflow try's profiles or debug dumps. Each try
    has its own folder, so a retry never overwrites what the failed try left."""
    return join(join(output_dir, kind), f"try-{try_number}")


def host_uri(output_dir: str, kind: str, try_number: int, host: int, restart: int = 0) -> str:
    """``<output_dir>/<kind>/try-<n>/host-<i>``, and ``.../restart-<k>`` for the k-th JobSet
    restart within the try: no attempt overwrites another's."""
    where = join(try_uri(output_dir, kind, try_number), f"host-{host}")
    return join(where, f"restart-{restart}") if restart else where


def check_storage_path(argument: str, value: object) -> str:
    """``value`` if it is a location of a store (``gs://<bucket>/...``, an absolute local path);
    else a ValueError naming ``argument``. One check for every path the provider writes or
    reads (``output_dir``, ``checkpoint_dir``), on the Airflow side and in the pods alike."""
    parse_location(value, argument)
    return str(value)
