"""Delete the running JobSets whose deferred task was marked failed or success before any
triggerer ran its trigger.

Airflow cancels only *running* triggers. A deferred task acted on while its trigger is not
running anywhere (no triggerer up, or one that had not started it yet) gets no ``on_kill()``:
the triggerer's clean-up drops the trigger row, and the JobSet's chips stay held until its
``activeDeadlineSeconds``. So the shared JobSet watch of a namespace sweeps its cache, which
holds every JobSet of ours there at no request of its own: at its first list, then every
:data:`SWEEP_EVERY_S`.

A JobSet is deleted (by uid, Foreground) only when all of these hold, so a task that still
waits on it never loses it:

- a try deferred on it (``jax.airflow.apache.org/deferred-by-try``): no later try reattaches
  to such a JobSet (it deletes it and starts afresh), and a blocking try's ``on_kill`` runs in
  its own worker;
- it carries its task instance (``jax.airflow.apache.org/task-instance``, exact, where the
  labels are hashed): a JobSet of an older release is left alone;
- it has not finished, and no trigger in this triggerer watches it;
- Airflow says that task instance is in a finished state (failed, success, skipped,
  upstream_failed, removed): nothing of it waits any more, and a rerun (a clear) starts from
  a new try, which deletes the old JobSet itself. A deferred, scheduled, queued or running task
  instance (a trigger that fired, a try resuming) keeps it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from airflow_provider_jax.manifest import status
from airflow_provider_jax.manifest.provider_keys import (
    DEFERRED_BY_TRY_ANNOTATION,
    annotation,
    task_instance,
)
from airflow_provider_jax.triggers.watch.task_state import state_key, task_states

log = logging.getLogger(__name__)

SWEEP_EVERY_S = 60.0
# On in a triggerer (JobSetTrigger.run turns it on); a blocking task's worker waits through
# the same watch but does not sweep: its execution API is the task's own.
enabled = False
#: (dag_id, task_ids, run_ids) -> {run_id: {task_id or task_id_mapindex: state}}, as Airflow's
#: :func:`~airflow_provider_jax.triggers.watch.task_state.task_states` answers.
StatesOf = Callable[[str, list[str], list[str]], Mapping[str, Any]]


def candidates(cache: Mapping[str, Mapping[str, Any]], watched: Iterable[str]) -> list[Any]:
    """The JobSets of ``cache`` a sweep asks about: deferred on, with their task instance,
    still running, and not watched here."""
    here = set(watched)
    return [
        jobset
        for name, jobset in cache.items()
        if name not in here
        and annotation(jobset, DEFERRED_BY_TRY_ANNOTATION) is not None
        and task_instance(jobset) is not None
        and status.terminal_state(jobset) is None
        and not (jobset.get("metadata") or {}).get("deletionTimestamp")
    ]


def questions(jobsets: Iterable[Any]) -> dict[str, tuple[list[str], list[str]]]:
    """What to ask Airflow about ``jobsets``: per DAG, its task ids and run ids (one question
    per DAG for all of its JobSets)."""
    asked: dict[str, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    for jobset in jobsets:
        if (ti := task_instance(jobset)) is not None:
            asked[ti["dag_id"]][0].add(ti["task_id"])
            asked[ti["dag_id"]][1].add(ti["run_id"])
    return {dag: (sorted(tasks), sorted(runs)) for dag, (tasks, runs) in asked.items()}


def abandoned(jobsets: Iterable[Any], answers: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    """Those of ``jobsets`` whose task instance has finished, by ``answers`` (per DAG, the
    answer to its :func:`questions`)."""
    from airflow.utils.state import State  # its finished states; a triggerer has Airflow

    gone = []
    for jobset in jobsets:
        if (ti := task_instance(jobset)) is None:
            continue
        runs = answers.get(ti["dag_id"]) or {}
        key = state_key(ti["task_id"], ti["map_index"])
        if (runs.get(ti["run_id"]) or {}).get(key) in State.finished:
            gone.append(jobset)
    return gone


async def sweep_forever(informer: Any, states_of: StatesOf | None = None) -> None:
    """Sweep ``informer``'s namespace once its first list is in, then every
    :data:`SWEEP_EVERY_S`, until it stops. Where task states cannot be read (no execution
    API: ``airflow dags test``), it says so once and stops; a sweep's own error waits for
    the next sweep."""
    from asgiref.sync import sync_to_async

    ask = sync_to_async(states_of or task_states)
    while informer.running:
        if not informer.synced:
            await asyncio.sleep(1.0)
            continue
        jobsets = candidates(informer.cache, informer.subscribers)
        try:
            answers = {dag: await ask(dag, *q) for dag, q in questions(jobsets).items()}
        except (AttributeError, ImportError, NameError, RuntimeError) as err:  # no execution API
            log.info("Not sweeping %s for abandoned JobSets: %s", informer.namespace, err)
            return
        except Exception:
            log.warning("A sweep of %s failed", informer.namespace, exc_info=True)
            answers = {}
        for jobset in abandoned(jobsets, answers):
            await _delete(informer, jobset)
        await asyncio.sleep(SWEEP_EVERY_S)


async def _delete(informer: Any, jobset: Mapping[str, Any]) -> None:
    meta = jobset["metadata"]
    ti = task_instance(jobset) or {}
    log.warning(
        "Deleting JobSet %s/%s: its task %s.%s (run %s) finished while deferred on it, "
        "before any triggerer ran its trigger",
        informer.namespace,
        meta["name"],
        ti.get("dag_id"),
        ti.get("task_id"),
        ti.get("run_id"),
    )
    try:
        await informer.hook.delete_jobset(meta["name"], informer.namespace, meta.get("uid"))
    except Exception:  # the next sweep tries again
        log.warning(
            "Could not delete JobSet %s/%s", informer.namespace, meta["name"], exc_info=True
        )
