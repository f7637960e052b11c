"""Each local process's host-local checkpoint tier (``local_checkpoint_size``): a folder of
its own for the run, where a pod has an in-memory ``emptyDir``. It survives the process's
restarts, as the pod's volume survives an in-place restart, and is removed with the run."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from airflow_provider_jax.backends.local.pods import PodPlan
from airflow_provider_jax.runtime.env import LOCAL_CHECKPOINT_DIR_ENV


@contextlib.contextmanager
def local_tiers(manifest: Mapping[str, Any]) -> Iterator[str | None]:
    """A folder for the run's tiers, when its pods have one (None otherwise)."""
    name = manifest["metadata"]["name"]
    if not any(
        LOCAL_CHECKPOINT_DIR_ENV in _env_names(r) for r in manifest["spec"]["replicatedJobs"]
    ):
        yield None
        return
    root = tempfile.mkdtemp(prefix=f"{name}-local-tier-")
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def with_tier(plan: PodPlan, root: str | None) -> PodPlan:
    """``plan`` with its tier at ``<root>/<slice>-<host>`` (the same at every attempt)."""
    if root is None or LOCAL_CHECKPOINT_DIR_ENV not in plan.env:
        return plan
    folder = os.path.join(root, f"{plan.slice_index}-{plan.host_index}")
    os.makedirs(folder, exist_ok=True)
    return dataclasses.replace(plan, env={**plan.env, LOCAL_CHECKPOINT_DIR_ENV: folder})


def _env_names(rjob: Mapping[str, Any]) -> set[str]:
    containers = rjob["template"]["spec"]["template"]["spec"]["containers"]
    return {item["name"] for c in containers for item in c.get("env", [])}
