"""Whether a deferred task still waits on its trigger: the one fact that tells a user's kill
(clear, mark failed or success: the task left DEFERRED) from a trigger that merely moved.

Airflow 3.3 calls a trigger's ``on_kill()`` for user actions, and also on the old triggerer
when another one took the trigger over after its heartbeat lapsed (apache/airflow#73454, open
as of 3.3.2); before 3.3, ``cleanup()`` runs on every stop. Either way only the task's state
can say whether the JobSet must go.

The state is read through the triggerer's execution API, which Airflow imports on its first
use in a triggerer process: seconds, during which that triggerer's main loop stalls.
:func:`warm_up` pays that once, when the first trigger starts, so a user's kill is not also
the one that waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping
from typing import Any

_background: set[asyncio.Task[Any]] = set()  # strong references until each task is done
_warmed = False


def task_states(
    dag_id: str, task_ids: list[str], run_ids: list[str], map_index: int | None = None
) -> Mapping[str, Mapping[str, Any]]:
    """``{run_id: {state_key: state}}`` through this process's execution API (a triggerer's,
    or a worker's); blocking."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    return RuntimeTaskInstance.get_task_states(
        dag_id=dag_id, task_ids=task_ids, run_ids=run_ids, map_index=map_index
    )


def state_key(task_id: str, map_index: int) -> str:
    """How :func:`task_states` keys a task instance within its run."""
    return f"{task_id}_{map_index}" if map_index >= 0 else task_id


async def task_left_deferred(ti: Any) -> bool:
    """Whether task instance ``ti`` (the trigger's) is no longer DEFERRED."""
    from airflow.utils.state import TaskInstanceState
    from asgiref.sync import sync_to_async

    states = await sync_to_async(task_states)(ti.dag_id, [ti.task_id], [ti.run_id], ti.map_index)
    return states[ti.run_id][state_key(ti.task_id, ti.map_index)] != TaskInstanceState.DEFERRED


def warm_up(ti: Any) -> None:
    """Read ``ti``'s state once per process, in the background, ignoring the answer."""
    global _warmed
    if _warmed or ti is None:
        return
    _warmed = True
    in_background(_quietly(task_left_deferred(ti)))


async def _quietly(work: Coroutine[Any, Any, Any]) -> None:
    with contextlib.suppress(Exception):
        await work


def in_background(work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """Run ``work`` to its end even if whoever awaits it is cancelled: Airflow may cancel a
    trigger again while its ``on_kill()`` still runs, and a delete must not stop halfway."""
    task = asyncio.get_running_loop().create_task(work)
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task
