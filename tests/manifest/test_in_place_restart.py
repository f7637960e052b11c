"""``restart_strategy`` and ``local_checkpoint_size`` in the manifest: JobSet v0.12's
``InPlaceRestart`` as its sidecar-mode example renders it, and the host-local tier."""

from __future__ import annotations

import pytest

from airflow_provider_jax.manifest import in_place_restart, local_checkpoints
from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.failure_policy import restartable_codes
from airflow_provider_jax.runtime.env import LOCAL_CHECKPOINT_DIR_ENV, RESTART_STRATEGY_ENV
from tests.support.job_specs import _pod, _rjob, spec

AGENT = "registry.example.com/jobset/in-place-restart-agent:v0.12.0"


def test_in_place_renders_what_jobset_requires_and_validates(validate_jobset):
    manifest = build_jobset(
        spec(parse_tpu("v5e-32"), 2, restart_strategy="in_place", restart_agent_image=AGENT)
    )
    validate_jobset(manifest)
    assert manifest["spec"]["failurePolicy"]["restartStrategy"] == "InPlaceRestart"
    job = _rjob(manifest)["template"]["spec"]
    # What JobSet's webhook refuses the JobSet without.
    assert job["backoffLimit"] == 2**31 - 1
    assert job["podReplacementPolicy"] == "Failed"
    assert job["completions"] == job["parallelism"]
    # A code error still fails its Job by rule, and the JobSet with it.
    assert job["podFailurePolicy"]["rules"][1]["action"] == "FailJob"
    pod = _pod(manifest)
    (agent,) = pod["initContainers"]
    assert agent["image"] == AGENT and agent["restartPolicy"] == "Always"
    assert agent["restartPolicyRules"] == [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "NotIn", "values": [0]}}
    ]
    assert agent["startupProbe"]["httpGet"] == {"path": "/barrier-is-down", "port": 8081}
    assert {e["name"] for e in agent["env"]} == {"JOBSET_NAME", "POD_NAME"}
    program = pod["containers"][0]
    assert program["restartPolicy"] == "Never"
    (rule,) = program["restartPolicyRules"]
    assert rule["action"] == "RestartAllContainers"
    assert rule["exitCodes"] == {"operator": "In", "values": restartable_codes()}
    assert {"name": RESTART_STRATEGY_ENV, "value": "in_place"} in program["env"]


def test_recreate_renders_no_agent_and_jobsets_own_defaults():
    manifest = build_jobset(spec(parse_tpu("v5e-32"), 2))
    assert "restartStrategy" not in manifest["spec"]["failurePolicy"]
    assert _rjob(manifest)["template"]["spec"]["backoffLimit"] == 0
    pod = _pod(manifest)
    assert "initContainers" not in pod and "restartPolicyRules" not in pod["containers"][0]


def test_the_local_tier_is_a_memory_emptydir_or_gkes_mtc_volume(validate_jobset):
    manifest = build_jobset(spec(parse_tpu("v5e-16"), local_checkpoint_size="32Gi"))
    validate_jobset(manifest)
    pod = _pod(manifest)
    assert {"name": local_checkpoints.VOLUME,
            "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in pod["volumes"]  # fmt: skip
    program = pod["containers"][0]
    assert {"name": local_checkpoints.VOLUME, "mountPath": local_checkpoints.MOUNT_PATH} in (
        program["volumeMounts"]
    )
    assert {"name": LOCAL_CHECKPOINT_DIR_ENV, "value": local_checkpoints.MOUNT_PATH} in (
        program["env"]
    )
    mtc = build_jobset(
        spec(parse_tpu("v5e-16"), local_checkpoint_size="32Gi", multi_tier_checkpointing=True)
    )
    assert {"name": local_checkpoints.VOLUME,
            "csi": {"driver": "multitier-checkpoint.csi.storage.gke.io"}} in _pod(mtc)["volumes"]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"restart_strategy": "inplace"}, "restart_strategy must be one of"),
        ({"restart_strategy": "in_place"}, "needs JobSet's in-place restart agent image"),
        ({"local_checkpoint_size": "lots"}, "local_checkpoint_size must be a positive"),
        ({"local_checkpoint_size": "0Gi"}, "local_checkpoint_size must be a positive"),
        ({"local_checkpoint_size": 64}, "local_checkpoint_size must be a positive"),
        ({"local_checkpoint_size": "192G"}, "does not fit in the memory of a ct5lp-hightpu-4t"),
        (
            {"local_checkpoint_size": "64Gi", "resources": {"limits": {"memory": "64Gi"}}},
            "not below the container's memory limit",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        spec(parse_tpu("v5e-16"), **kwargs)


def test_quantities_are_read_as_kubernetes_reads_them():
    assert local_checkpoints.size_bytes("64Gi") == 64 * 2**30
    assert local_checkpoints.size_bytes("500M") == 500 * 10**6
    assert local_checkpoints.size_bytes("1.5Gi") == int(1.5 * 2**30)


def test_the_agent_is_refused_with_pathways():
    with pytest.raises(ValueError, match="does not go with pathways"):
        in_place_restart.check_restart_strategy("in_place", pathways=True)
