"""Triggers run against the Kubernetes emulator: the helpers the trigger and watcher tests share."""

from __future__ import annotations

import re

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import manifest, trigger_for


def submit(k8s, **kwargs) -> JobSetTrigger:
    return trigger_for(KubernetesCluster().hook().create_jobset(manifest(**kwargs)))


def assert_restart_logged(task_log: str, count: str, cause: str) -> None:
    """The restart's line, naming host 1 and why when its pods were still there to read.
    JobSet deletes a restarted attempt's Jobs right after counting the restart, so on a busy
    machine (or cluster) the pods can be gone first; the line then says so."""
    named = rf"restart {count} after a disruption on \[0/1\]: {cause}"
    gone = rf"restart {count}: its cause was not visible"
    assert re.search(f"{named}|{gone}", task_log), task_log


async def events(trigger: JobSetTrigger) -> list[dict]:
    return [event.payload async for event in trigger.run()]
