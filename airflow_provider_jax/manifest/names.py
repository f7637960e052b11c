"""JobSet names: one per task instance, and never one whose pod names Kubernetes would reject."""

from __future__ import annotations

import hashlib
import re

from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.manifest.pathways import HEAD, WORKER

_MAX_LABEL = 63
_POD_SUFFIX = "-abcde"  # the random suffix Kubernetes adds to a Job's pod names
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def rjob_name(accelerator: Accelerator) -> str:
    """The replicated Job's name: it is part of every pod's name."""
    return "slice" if accelerator.kind == "tpu" else "node"


def _longest_pod_name(
    name: str, accelerator: Accelerator, num_slices: int, pathways: bool = False
) -> str:
    rjob = WORKER if pathways else rjob_name(accelerator)
    longest = f"{name}-{rjob}-{num_slices - 1}-{accelerator.hosts - 1}{_POD_SUFFIX}"
    head = f"{name}-{HEAD}-0-0{_POD_SUFFIX}"  # a Pathways job's CPU pod
    return max(longest, head, key=len) if pathways else longest


def max_name_length(accelerator: Accelerator, num_slices: int, pathways: bool = False) -> int:
    """Longest JobSet name whose pods still get valid (DNS-1035, <= 63 chars) names."""
    return _MAX_LABEL - (len(_longest_pod_name("", accelerator, num_slices, pathways)))


def check_name(
    name: str, accelerator: Accelerator, num_slices: int, pathways: bool = False
) -> None:
    """Reject names JobSet's webhook would reject, before anything reaches a cluster."""
    if not isinstance(name, str) or not _DNS_1035.fullmatch(name):
        raise ValueError(
            f"JobSet name {name!r} must be a DNS-1035 label: lowercase letters, digits and '-', "
            "starting with a letter."
        )
    limit = max_name_length(accelerator, num_slices, pathways)
    if len(name) > limit:
        raise ValueError(
            f"JobSet name {name!r} is {len(name)} characters; with {num_slices} slice(s) of "
            f"{accelerator.hosts} host(s) its pod names "
            f"({_longest_pod_name(name, accelerator, num_slices, pathways)!r}) would pass 63 "
            "characters. "
            f"Use at most {limit} characters."
        )


def jobset_name(
    dag_id: str,
    task_id: str,
    run_id: str,
    map_index: int,
    accelerator: Accelerator,
    num_slices: int,
    pathways: bool = False,
    max_length: int | None = None,
) -> str:
    """A deterministic name per task instance, so every try finds the same JobSet.

    Readable task id first, then a hash of the whole identity; try_number is left out on
    purpose, since a retry must reattach to (or replace) the JobSet of an earlier try.
    ``max_length`` caps it further (dynamic slicing's Slice names).
    """
    identity = f"{dag_id}\x00{task_id}\x00{run_id}\x00{map_index}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    longest = max_name_length(accelerator, num_slices, pathways)
    budget = min(longest, max_length or longest) - len(digest) - 1
    if budget < 1:
        raise ValueError(
            f"{num_slices} slice(s) of {accelerator.hosts} hosts leave no room for a JobSet name."
        )
    slug = re.sub(r"[^a-z0-9]+", "-", task_id.lower()).strip("-")
    slug = re.sub(r"^[^a-z]+", "", slug)[:budget].rstrip("-") or "jax"
    return f"{slug[:budget]}-{digest}"
