"""The JobSet a try submitted, kept in Airflow's ``task_state_store`` (Airflow 3.3, AIP-103):
what a later try of the same task instance reads back to reconnect instead of resubmitting.

Airflow's ``ResumableJobMixin`` records the external id *after* submitting, and says so: a
worker lost between the two makes its retry resubmit. A JobSet's name is deterministic per
task instance (``manifest/names.py``), so the backend's start reattaches by name even then;
the store adds what the name cannot say: which JobSet (by uid) the earlier try waited on, and
on which capacity choice, so the retry's log says whether it reconnected to that one or found
it gone. The record is plain JSON, kept across tries (``NEVER_EXPIRE``);
Airflow drops it when the task instance is cleared.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_jax.contract.backend import Started

# The store's key. Never renamed: a try of the previous release reads what this one wrote.
STATE_KEY = "jobset"


@dataclass(frozen=True)
class Recorded:
    """What a try recorded of the JobSet it submitted or reattached to."""

    name: str
    namespace: str
    uid: str
    capacity_choice: int
    try_number: int


def _store(context: Context) -> Any:
    return context.get("task_state_store")


def recorded(context: Context, log: logging.Logger | Any) -> Recorded | None:
    """The record an earlier try left, or None (first try, no store, or a value this release
    cannot read, which is logged and ignored: the name still finds the JobSet)."""
    store = _store(context)
    value = store.get(STATE_KEY) if store is not None else None
    if value is None:
        return None
    try:
        found = Recorded(**value)
        kinds = (str, str, str, int, int)
        if any(type(v) is not k for v, k in zip(asdict(found).values(), kinds, strict=True)):
            raise TypeError("a field of another type")  # a bool is not a try number
    except TypeError as err:
        log.warning("Ignoring the task state store's %r record %r: %s.", STATE_KEY, value, err)
        return None
    log.info(
        "Try %d recorded JobSet %s/%s (uid %s, capacity choice %d) in Airflow's task state "
        "store: reconnecting to it if it still runs.",
        *(found.try_number, found.namespace, found.name, found.uid or "-"),
        found.capacity_choice,
    )
    return found


def record(
    context: Context, started: Started, before: Recorded | None, log: logging.Logger | Any
) -> None:
    """Keep what this try runs on, and say whether it is the earlier try's JobSet."""
    store = _store(context)
    if store is None:
        return
    from airflow.sdk.execution_time.context import NEVER_EXPIRE

    now = Recorded(
        started.name,
        started.namespace,
        started.uid,
        started.capacity_choice,
        context["ti"].try_number,
    )
    if before is not None and before.uid and before.uid == now.uid:
        log.info("Reconnected to the JobSet of try %d.", before.try_number)
    elif before is not None and before.uid:
        log.info(
            "The JobSet of try %d (uid %s) is gone; this try runs JobSet %s/%s (uid %s).",
            *(before.try_number, before.uid, now.namespace, now.name, now.uid or "-"),
        )
    store.set(STATE_KEY, asdict(now), retention=NEVER_EXPIRE)
