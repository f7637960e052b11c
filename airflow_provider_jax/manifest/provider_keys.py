"""The keys and names this provider itself sets on JobSets and pods.

Every JobSet it makes carries MANAGED_BY_LABEL (the shared watch selects on it) and Airflow's
identity (``operators/job_spec.py``, ``airflow_labels``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_jax.manifest.jobset_api import EXCLUSIVE_TOPOLOGY_ANNOTATION
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.runtime.env import DEFAULT_TERMINATION_PATH

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "airflow-provider-jax"
IDENTITY_LABELS = ("dag_id", "task_id", "run_id", "map_index")
TRY_NUMBER_LABEL = "try_number"
# Set on a JobSet just before a try defers on it: that try's trigger now owns its deletion.
DEFERRED_BY_TRY_ANNOTATION = "jax.airflow.apache.org/deferred-by-try"
# Its task instance, exact (the labels are hashed to fit): the abandoned-JobSet sweep asks
# Airflow for that task's state (triggers/watch/orphans.py).
TASK_INSTANCE_ANNOTATION = "jax.airflow.apache.org/task-instance"
# Which choice of a capacity list the JobSet asks for (0 first): a reattaching try goes on
# down the list from there.
CAPACITY_CHOICE_ANNOTATION = "jax.airflow.apache.org/capacity-choice"
# On an elastic job's JobSet made at fewer slices than it asks for (min_slices): its size, so a
# reattaching try's trigger watches it at that size.
SLICES_ANNOTATION = "jax.airflow.apache.org/slices"
# On every choice of a list but the last: seconds from creation to every pod running, past
# which the trigger deletes it for the next choice. On the JobSet, so a reattaching try's
# trigger waits as the choice it finds asks, whichever choice its own try started from.
CAPACITY_WAIT_ANNOTATION = "jax.airflow.apache.org/capacity-wait"

# What a user's labels or annotations may not set: the provider sets each on every JobSet,
# and a user's value would silently lose (or, for the queue, bypass queue_name's checks).
MANAGED_LABELS = (MANAGED_BY_LABEL, *IDENTITY_LABELS, TRY_NUMBER_LABEL, KUEUE_QUEUE_LABEL)
MANAGED_ANNOTATIONS = (
    DEFERRED_BY_TRY_ANNOTATION,
    TASK_INSTANCE_ANNOTATION,
    CAPACITY_CHOICE_ANNOTATION,
    CAPACITY_WAIT_ANNOTATION,
    EXCLUSIVE_TOPOLOGY_ANNOTATION,
    SLICES_ANNOTATION,
)
# Every environment variable of this prefix is the provider's (the call, the runtime, where
# the process sits, output_dir); a user's env may set none.
PROVIDER_ENV_PREFIX = "AIRFLOW_JAX_"


def annotation(obj: Mapping[str, Any], key: str) -> str | None:
    """The value of annotation ``key`` on a JobSet (or any object), if it has one."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(key)


def task_instance_annotation(dag_id: str, task_id: str, run_id: str, map_index: int) -> str:
    """The value of :data:`TASK_INSTANCE_ANNOTATION`: the exact identity, as JSON."""
    ti = dict(zip(IDENTITY_LABELS, (dag_id, task_id, run_id, map_index), strict=True))
    return json.dumps(ti, sort_keys=True, separators=(",", ":"))


def task_instance(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The task instance a JobSet was made for (its annotation), or None without a valid one."""
    try:
        ti = json.loads(annotation(obj, TASK_INSTANCE_ANNOTATION) or "")
    except ValueError:
        return None
    *names, index = IDENTITY_LABELS
    if not isinstance(ti, dict) or not all(isinstance(ti.get(k), str) for k in names):
        return None
    map_index = ti.get(index)
    return ti if isinstance(map_index, int) and not isinstance(map_index, bool) else None


def slices_annotated(obj: Mapping[str, Any]) -> int | None:
    """The size an elastic job's JobSet was made at (its annotation), or None."""
    value = annotation(obj, SLICES_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdigit() and int(value) else None


def capacity_choice(obj: Mapping[str, Any]) -> int:
    """The capacity choice a JobSet asks for (its annotation; 0 without one)."""
    value = annotation(obj, CAPACITY_CHOICE_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def capacity_wait(obj: Mapping[str, Any]) -> float | None:
    """How long a JobSet's capacity choice may wait before the next is tried; None when it
    has no next (its annotation)."""
    value = annotation(obj, CAPACITY_WAIT_ANNOTATION)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def refuse_managed(
    labels: Mapping[str, Any], annotations: Mapping[str, Any], env: Iterable[str]
) -> None:
    """A ValueError naming the argument, for a label, annotation or env name the provider sets."""
    if taken := sorted(k for k in labels if k in MANAGED_LABELS):
        hint = " (use queue_name= for Kueue's queue)" if KUEUE_QUEUE_LABEL in taken else ""
        raise ValueError(
            f"labels sets {taken}, which the provider sets on every JobSet (the shared watch "
            f"and Airflow's identity read them){hint}. Use other keys."
        )
    if taken := sorted(k for k in annotations if k in MANAGED_ANNOTATIONS):
        raise ValueError(f"annotations sets {taken}, which the provider sets. Use other keys.")
    if taken := sorted(k for k in env if isinstance(k, str) and k.startswith(PROVIDER_ENV_PREFIX)):
        raise ValueError(
            f"env sets {taken}: variables named {PROVIDER_ENV_PREFIX}* are the provider's own "
            "(the call, the runtime, where a process sits, output_dir), set for every process. "
            "Rename yours."
        )


CONTAINER_NAME = "jax"
TERMINATION_MESSAGE_PATH = DEFAULT_TERMINATION_PATH
