"""Every argument of the TPU operator drawn from its kind's bad values, alone and in pairs: each
draw is refused at construction with a ValueError or TypeError that names the argument, or it
builds a JobSet that the pinned JobSet CRD and the pod's own schema accept. Hypothesis draws,
derandomized, so a run is the same on every machine; a failure prints the smallest draw that
fails."""

from __future__ import annotations

import math
from typing import Any

import pytest
from airflow.sdk import DAG
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_jax.manifest import pod_schema
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.jobset_schema import jobset_validator

BASE = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
NAN, INF = math.nan, math.inf
NUMBERS = [NAN, INF, -INF, -1, 0, True, False, 2.5, "10", "10\n", 10**12]
NAMES = ["", "x\n", " x", "X", "bad name", "a" * 300, True, 3, "jax", "-x"]
ENUM_SLIPS = ["", " ", "\n", True, 0]
TEXT_MAPS: list[Any] = [
    {},
    {"": "x"},
    {"a\n": "b"},
    {"a": "b\n"},
    {"a": True},
    {"a": NAN},
    "a=b",
    ["a"],
    {"jobset.sigs.k8s.io/jobset-name": "x"},
]
LISTS: list[Any] = [[], [{}], "x", [True], [NAN], [None], {"a": 1}]

# The kind of each argument and its bad values; the provider's own names among them.
KINDS: dict[str, list[Any]] = {
    "poll_interval": NUMBERS,
    "queue_timeout": NUMBERS,
    "capacity_wait": NUMBERS,
    "checkpoint_warn_after": NUMBERS,
    "progress_timeout": NUMBERS,
    "max_restarts": NUMBERS,
    "ttl_seconds_after_finished": NUMBERS,
    "termination_grace_period": NUMBERS,
    "num_slices": NUMBERS,
    "coordinator_port": [*NUMBERS, 65536, 70000],
    "total_steps": [NAN, INF, -1, 0, True, "ten", "10\n"],
    "namespace": NAMES,
    "service_account_name": NAMES,
    "priority_class_name": NAMES,
    "queue_name": NAMES,
    "compute_class": NAMES,
    "name": NAMES,
    "image": ["", "bad image", "IMG", "img\n", True, " img"],
    "image_pull_policy": ["always", "ALWAYS", "Always\n", *ENUM_SLIPS],
    "restart_strategy": ["In_Place", "inplace", "recreate\n", *ENUM_SLIPS],
    "queue_timeout_until": ["Running", "admitted\n", *ENUM_SLIPS],
    "gpu_networking": ["Auto", "none\n", *ENUM_SLIPS],
    "stream_logs": ["Leader", "all\n", *ENUM_SLIPS],
    "on_finish_action": ["Delete_JobSet", "keep_jobset\n", *ENUM_SLIPS],
    "backend": ["Local", "kubernetes\n", *ENUM_SLIPS],
    "local_checkpoint_size": ["64", "0.5", "64Gi\n", "-1Gi", "0Gi", "1e3", 64, NAN, True, "1000Ti"],
    "labels": TEXT_MAPS,
    "annotations": TEXT_MAPS,
    "node_selector": [*TEXT_MAPS, {"cloud.google.com/gke-tpu-topology": "2x2"}],
    "env": [*TEXT_MAPS, {"JAX_COORDINATOR_ADDRESS": "x"}, {"AIRFLOW_JAX_CALL": "{}"}],
    "entrypoint_kwargs": [[1], "x", {"a": NAN}, {"a": INF}, {1: "x"}],
    "container_resources": [{"limits": {"memory": "64"}}, {"limits": {"cpu": NAN}}, {"x": {}}],
    "tolerations": [*LISTS, [{"key": "k", "operator": "In"}]],
    "volumes": [
        *LISTS,
        [{"name": "v"}],
        [{"name": "v", "emptyDir": {}}] * 2,
        [{"name": "jax-local-checkpoints", "emptyDir": {}}],
    ],
    "volume_mounts": [*LISTS, [{"name": "missing", "mountPath": "/d"}]],
    "restart_on_exit_codes": [*LISTS, [0], [256], [42, 42], [-1]],
    "pip_packages": [*LISTS, ["--index-url=x"], ["numpy\n"]],
    "gpu_networks": [*LISTS, ["", ""]],
    "capacity": ["Spot", "spot\n", ["spot", "spot"], [], "reservation:", "reservation:R", True, 3],
    "placement": ["Compact", "required:rack", "preferred:", True, "compact\n"],
    "reservation_project": NAMES,
    "debug_dump": ["false", 0, 1, "True", NAN],
    "deferrable": ["false", 0, 1, "True", NAN],
    "retry_on_code_error": ["false", 0, 1, NAN],
    "initialize_distributed": ["false", 0, 1, NAN],
    "host_network": ["false", 0, 1, NAN],
    "profile_steps": [(NAN, 1), (-1, 3), (0, 0), (True, 1), [1, 2, 3], "1,2", (0, 101), 5],
    "security_context": [
        {"runAsUser": -1},
        {"privileged": True, "allowPrivilegeEscalation": False},
        {"runAsUser": "0"},
        {"capabilities": {"add": "ALL"}},
        "privileged",
    ],
    "pod_template_override": [
        {"spec": {"restartPolicy": "Always"}},
        {"metadata": {"labels": {"bad key!": "v"}}},
        {"spec": {"containers": [{"name": "jax", "image": "bad image"}]}},
        {
            "spec": {
                "containers": [{"name": "jax", "env": [{"name": "JAX_PROCESS_ID", "value": "0"}]}]
            }
        },
        {"spec": {"nodeSelector": {"cloud.google.com/gke-tpu-topology": "2x2"}}},
        {"spec": {"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]}},
        {"spec": {"tolerations": [{"key": "k", "operator": "In"}]}},
        {"spec": {"containers": [{"name": "jax", "securityContext": {"runAsUser": -5}}]}},
        "x",
    ],
}
# Some arguments only mean something beside another: each draw gets these too.
NEEDS: dict[str, dict[str, Any]] = {
    "capacity_wait": {"capacity": ["spot", "on-demand"]},
    "reservation_project": {"capacity": "reservation:r"},
    "queue_timeout_until": {"queue_name": "q"},
    "profile_steps": {"output_dir": "/tmp/out"},
}
ARGUMENTS = sorted(KINDS)


def draw_for(argument: str) -> st.SearchStrategy[tuple[str, Any]]:
    return st.tuples(st.just(argument), st.sampled_from(KINDS[argument]))


DRAWS = st.sampled_from(ARGUMENTS).flatmap(draw_for)


def build(kwargs: dict[str, Any]) -> None:
    """Construct the operator; if that passes, render its JobSet and hold it to the schemas."""
    with DAG("fuzz", schedule=None):
        op = JaxTpuSliceOperator(**kwargs)
    jobset = build_jobset(op.build_spec(name="fuzz-jobset", rendered=False))
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_schema.check("the rendered pod template", pod, pod_schema.POD_TEMPLATE)
    errors = sorted(jobset_validator().iter_errors(jobset), key=str)
    assert not errors, f"{kwargs}: the JobSet schema refuses {errors[0].message}"


def refused_by_name(kwargs: dict[str, Any], named: list[str]) -> None:
    try:
        build(kwargs)
    except (ValueError, TypeError) as err:
        message = str(err)
        assert any(n in message for n in named), f"{kwargs}: {message!r} names none of {named}"


@settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(first=DRAWS, second=DRAWS)
def test_each_bad_value_is_refused_by_name_or_renders_a_valid_jobset(first, second):
    kwargs = dict(BASE)
    named = []
    for argument, value in (first, second):
        kwargs.update(NEEDS.get(argument, {}))
        kwargs[argument] = value
        named += [argument, *NEEDS.get(argument, {})]
    refused_by_name(kwargs, named)


@pytest.mark.parametrize("argument", ARGUMENTS)
def test_every_bad_value_of_an_argument_alone(argument):
    """Each value of each kind once, so none is left to chance."""
    for value in KINDS[argument]:
        refused_by_name({**BASE, **NEEDS.get(argument, {}), argument: value}, [argument])


def test_every_argument_of_the_operator_has_a_kind():
    import inspect

    from airflow_provider_jax.operators.job_operator import JaxJobOperator

    declared = set(inspect.signature(JaxJobOperator.__init__).parameters) - {"self", "kwargs"}
    unfuzzed = {  # not values a user types wrong by kind: objects the provider's types check
        "accelerator", "command", "entrypoint", "output_dir", "checkpoint_asset", "pathways",
        "python", "storage", "secrets", "kubernetes_conn_id", "project_id", "location",
        "cluster_name", "gcp_conn_id", "impersonation_chain",
    }  # fmt: skip
    assert declared - unfuzzed == set(KINDS), "declare the new argument's kind in KINDS"
