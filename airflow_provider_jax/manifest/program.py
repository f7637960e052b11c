"""The container that runs the user's program, and what every JobSet shape shares around it:
the pod template override and the deadline rule. Pure: no I/O. Used by ``build`` (one
program per host) and ``pathways_build`` (one program, in the Pathways head)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.manifest import pod_schema
from airflow_provider_jax.manifest.pod_override import merge_override, refuse_conflicts
from airflow_provider_jax.manifest.provider_keys import CONTAINER_NAME, TERMINATION_MESSAGE_PATH
from airflow_provider_jax.manifest.secret_refs import render_env, secret_mounts
from airflow_provider_jax.manifest.spec import JaxJobSpec

# A child Job past activeDeadlineSeconds fails the JobSet outright: no restart.
DEADLINE_RULE = {
    "name": "FailAtDeadline",
    "action": "FailJobSet",
    "onJobFailureReasons": ["DeadlineExceeded"],
}


def app_container(
    spec: JaxJobSpec,
    command: list[str],
    env: list[dict[str, Any]],
    resources: Mapping[str, Any] | None = None,
    ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The container that runs the user's program: its env after ``env``, its secrets,
    mounts, security context and termination message. Shared with ``pathways_build``."""
    secret_env, env_from = render_env(spec.secrets)
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "command": command,
        "env": env + [{"name": k, "value": v} for k, v in spec.env.items()] + secret_env,
    }
    if resources:
        container["resources"] = resources
    if ports:
        container["ports"] = ports
    container["terminationMessagePath"] = TERMINATION_MESSAGE_PATH
    container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    if spec.image_pull_policy:
        container["imagePullPolicy"] = spec.image_pull_policy
    if spec.security_context:
        container["securityContext"] = copy.deepcopy(dict(spec.security_context))
    if env_from:
        container["envFrom"] = env_from
    if (
        mounts := [dict(m) for m in spec.volume_mounts]
        + spec.data_mounts
        + secret_mounts(spec.secrets)
    ):
        container["volumeMounts"] = mounts
    return container


def apply_override(template: dict[str, Any], spec: JaxJobSpec) -> dict[str, Any]:
    """``pod_template_override`` deep-merged over the pod that runs the user's program."""
    if not spec.pod_template_override:
        return template
    overrides = (spec.pod_template_override.get("spec") or {}).get("containers") or []
    if any(c.get("name") == CONTAINER_NAME and "securityContext" in c for c in overrides):
        # Replaced, not merged: privileged=true beside our allowPrivilegeEscalation=false
        # is a pod the API server rejects.
        for container in template["spec"]["containers"]:
            if container["name"] == CONTAINER_NAME:
                container.pop("securityContext", None)
    refuse_conflicts(template, spec.pod_template_override)
    merged = merge_override(template, spec.pod_template_override)
    pod_schema.check_mounts("pod_template_override", merged)
    return merged
