"""A Pathways JobSet as the local backend runs it: the single controller alone.

On GKE the head's one process drives every chip of every slice through the IFRT proxy. Here
that process runs on its own, with as many CPU devices as the slices have chips, so mesh and
sharding code written for Pathways runs unchanged: ``jax.device_count()`` is the chip count and
``jax.process_count()`` is 1. No Pathways server, proxy or worker runs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.manifest.accelerators.model import TPU_RESOURCE
from airflow_provider_jax.manifest.pathways import HEAD, WORKER
from airflow_provider_jax.manifest.provider_keys import CONTAINER_NAME
from airflow_provider_jax.reporting.goodput import chips


def is_pathways(manifest: Mapping[str, Any]) -> bool:
    return any(rjob["name"] == HEAD for rjob in manifest["spec"]["replicatedJobs"])


def single_controller(manifest: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The head alone, its program given the CPU devices of every chip; and the log line
    that says so. A headless job has no program to run here."""
    rjobs = {rjob["name"]: rjob for rjob in manifest["spec"]["replicatedJobs"]}
    head = copy.deepcopy(rjobs[HEAD])
    pod = head["template"]["spec"]["template"]["spec"]
    programs = [c for c in pod["containers"] if c["name"] == CONTAINER_NAME]
    if not programs:
        raise ValueError(
            "pathways headless=True runs no program of its own (clients connect to its proxy), "
            "and the local backend runs no Pathways proxy: use backend='kubernetes', or "
            "headless=False with an entrypoint."
        )
    total = chips(manifest)
    program = copy.deepcopy(programs[0])
    program.setdefault("resources", {}).setdefault("limits", {})[TPU_RESOURCE] = str(total)
    pod["containers"] = [program]
    pod.pop("initContainers", None)
    local = copy.deepcopy(dict(manifest))
    local["spec"]["replicatedJobs"] = [head]
    slices = rjobs[WORKER]["replicas"]
    line = (
        f"Pathways, emulated locally: one process (process_count() == 1) drives {total} CPU "
        f"devices standing in for the {total} chips of {slices} slice(s); no Pathways server "
        "runs."
    )
    return local, line
