"""``restart_strategy="in_place"``: JobSet v0.12's ``InPlaceRestart`` (KEP-467), rendered as its
sidecar-mode example does. Pure: no I/O.

- Every pod gets JobSet's in-place restart agent as a native sidecar (an init container with
  ``restartPolicy: Always``). It watches its JobSet and records the pod's restart attempt on
  the pod; the JobSet controller lines the attempts up across all pods.
- A startup probe on the agent is the barrier: Kubernetes starts the program's container only
  once the agent answers, which it does when every pod has reached the same attempt.
- A restartable exit of the program (a lost peer, a hung host, a death by signal) restarts all
  of its pod's containers in place (``RestartAllContainers``, Kubernetes 1.35+): same pod, node,
  IP and ``emptyDir``. The other pods' agents then exit on purpose, which restarts theirs.
- A code error still fails fast: the container is not restarted, the pod fails, and the Job's
  ``podFailurePolicy`` and the JobSet's ``FailJobSet`` rule end the run, as with ``recreate``.
- JobSet requires ``backoffLimit: MaxInt32`` (a failed pod is replaced alone, not its whole
  Job) and ``podReplacementPolicy: Failed`` (the replacement waits until the old pod is gone).

Sources: JobSet v0.12.0 ``cmd/in-place-restart-agent/main.go`` (env, probe path and port),
``pkg/webhooks/jobset_webhook.go`` (what it validates) and
``site/static/examples/in-place-restart/`` (the sidecar and its Role); Kubernetes' "Restart
all containers" (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from airflow_provider_jax.manifest.coordination import field_env

RestartStrategy = Literal["recreate", "in_place"]  # JobSet's Recreate (its default), InPlaceRestart
RESTART_STRATEGIES: tuple[RestartStrategy, ...] = get_args(RestartStrategy)
DEFAULT_RESTART_STRATEGY = "recreate"
JOBSET_STRATEGY = "InPlaceRestart"
AGENT_CONTAINER = "in-place-restart-agent"
# JobSet publishes no agent image yet (its example says "TODO: Make this available in the
# JobSet registry"): the platform builds cmd/in-place-restart-agent of this release and names
# its image in the connection extra or [jax] (docs/recovery.md).
AGENT_RELEASE = "v0.12.0"
AGENT_IMAGE_EXTRA = "in_place_restart_agent_image"
# What a manifest names before the cluster's image is known (at parse, in a dry run, locally).
AGENT_IMAGE_STAND_IN = f"{AGENT_CONTAINER}:{AGENT_RELEASE}"
BARRIER_PATH, BARRIER_PORT = "/barrier-is-down", 8081  # the agent's defaults
# How long a pod may wait at the barrier for the others: the whole slice's start on a busy
# cluster. Past it the probe fails and the agent restarts, which starts a new attempt.
BARRIER_WAIT_S = 3600
MAX_INT32 = 2**31 - 1
JOBSET_NAME_ANNOTATION = "jobset.sigs.k8s.io/jobset-name"


def check_restart_strategy(value: object, *, pathways: bool) -> None:
    """A ValueError that says what would be valid, unless ``restart_strategy`` works."""
    if value not in RESTART_STRATEGIES:
        raise ValueError(
            f"restart_strategy must be one of {list(RESTART_STRATEGIES)}, got {value!r}."
        )
    if value == "in_place" and pathways:
        raise ValueError(
            "restart_strategy='in_place' does not go with pathways=: the Pathways head and its "
            "workers hold sessions to each other that an in-place restart of one pod would "
            "not re-establish, and JobSet's agent restarts every pod alike. Use 'recreate'."
        )


def job_fields() -> dict[str, Any]:
    """What JobSet's webhook requires of every Job under ``InPlaceRestart``."""
    return {"backoffLimit": MAX_INT32, "podReplacementPolicy": "Failed"}


def agent_sidecar(image: str, security_context: Mapping[str, Any]) -> dict[str, Any]:
    """JobSet's agent as a native sidecar, with its barrier and the env it reads."""
    return {
        "name": AGENT_CONTAINER,
        "image": image,
        "restartPolicy": "Always",
        # Exiting on purpose (or failing) restarts the whole pod in place.
        "restartPolicyRules": [_rule("NotIn", [0])],
        "startupProbe": {
            "httpGet": {"path": BARRIER_PATH, "port": BARRIER_PORT},
            "periodSeconds": 1,
            "failureThreshold": BARRIER_WAIT_S,
        },
        "env": [
            field_env("JOBSET_NAME", f"metadata.annotations['{JOBSET_NAME_ANNOTATION}']"),
            field_env("POD_NAME", "metadata.name"),
        ],
        "securityContext": copy.deepcopy(dict(security_context)),
    }


def program_restart_fields(restartable: Iterable[int]) -> dict[str, Any]:
    """The program container's own rules: a restartable exit restarts the pod in place; any
    other code leaves it terminated, so the pod fails and the failure policy decides."""
    return {
        "restartPolicy": "Never",
        "restartPolicyRules": [_rule("In", sorted(restartable))],
    }


def _rule(operator: str, codes: list[int]) -> dict[str, Any]:
    return {"action": "RestartAllContainers", "exitCodes": {"operator": operator, "values": codes}}
