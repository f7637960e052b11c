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
from airflow_provider_jax.operators.job_arguments import JOB_ARGUMENTS, Argument
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

# Each kind's bad values, by the kind's name in the declaration (operators/job_arguments.py).
BY_KIND: dict[str, list[Any]] = {
    "seconds (> 0, finite)": NUMBERS,
    "duration (seconds > 0, finite, or a timedelta)": NUMBERS,
    "integer >= 0": NUMBERS,
    "integer >= 1": NUMBERS,
    "TCP port (1-65535)": [*NUMBERS, 65536, 70000],
    "integer >= 1 (or its digits, rendered)": [NAN, INF, -1, 0, True, "ten", "10\n"],
    "DNS-1123 label": NAMES,
    "DNS-1123 subdomain": NAMES,
    "label value": NAMES,
    "string": NAMES,
    "checked with `capacity`": NAMES,
    "image reference": ["", "bad image", "IMG", "img\n", True, " img"],
    "byte size with a unit (`64Gi`)": [
        "64", "0.5", "64Gi\n", "-1Gi", "0Gi", "1e3", 64, NAN, True, "1000Ti",
    ],
    "labels (qualified name → label value)": TEXT_MAPS,
    "annotations (qualified name → string)": TEXT_MAPS,
    "env (name → string)": TEXT_MAPS,
    "JSON object (str keys)": [[1], "x", {"a": NAN}, {"a": INF}, {1: "x"}],
    "resources (`limits`/`requests` → quantities)": [
        {"limits": {"memory": "64"}}, {"limits": {"cpu": NAN}}, {"x": {}},
    ],
    "list of mappings": LISTS,
    "list of integers": [*LISTS, [0], [256], [42, 42], [-1]],
    "list of strings": [*LISTS, ["", ""], ["numpy\n"]],
    "capacity | [capacity, ...]": [
        "Spot", "spot\n", ["spot", "spot"], [], "reservation:", "reservation:R", True, 3,
    ],
    "True | False": ["false", 0, 1, "True", NAN],
    "True | False | None": ["false", 0, 1, "True", NAN, "None"],
    "(start, count)": [(NAN, 1), (-1, 3), (0, 0), (True, 1), [1, 2, 3], "1,2", (0, 101), 5],
    "container securityContext": [
        {"runAsUser": -1},
        {"privileged": True, "allowPrivilegeEscalation": False},
        {"runAsUser": "0"},
        {"capabilities": {"add": "ALL"}},
        "privileged",
    ],
    "pod template (partial)": [
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
}  # fmt: skip
ENUM_KIND = " | "  # an enum's kind name lists its choices: each gets the slips below
# The provider's own names, and values that only one argument can get wrong.
BY_ARGUMENT: dict[str, list[Any]] = {
    "image_pull_policy": ["always", "ALWAYS", "Always\n"],
    "restart_strategy": ["In_Place", "inplace", "recreate\n"],
    "queue_timeout_until": ["Running", "admitted\n"],
    "gpu_networking": ["Auto", "none\n"],
    "stream_logs": ["Leader", "all\n"],
    "on_finish_action": ["Delete_JobSet", "keep_jobset\n"],
    "backend": ["Local", "kubernetes\n"],
    "node_selector": [{"cloud.google.com/gke-tpu-topology": "2x2"}],
    "env": [{"JAX_COORDINATOR_ADDRESS": "x"}, {"AIRFLOW_JAX_CALL": "{}"}],
    "labels": [{"jobset.sigs.k8s.io/jobset-name": "x"}],
    "tolerations": [[{"key": "k", "operator": "In"}]],
    "volumes": [
        [{"name": "v"}],
        [{"name": "v", "emptyDir": {}}] * 2,
        [{"name": "jax-local-checkpoints", "emptyDir": {}}],
    ],
    "volume_mounts": [[{"name": "missing", "mountPath": "/d"}]],
    "pip_packages": [["--index-url=x"]],
    "placement": ["Compact", "required:rack", "preferred:", True, "compact\n"],
}
# Objects the provider's own types parse, not values typed wrong by kind.
UNFUZZED = {"accelerator", "command", "entrypoint", "output_dir", "checkpoint_asset", "pathways",
            "python", "storage", "secrets", "kubernetes_conn_id", "project_id", "location",
            "cluster_name", "gcp_conn_id", "impersonation_chain"}  # fmt: skip


def bad_values(argument: Argument) -> list[Any]:
    kind = argument.kind.name
    values = BY_KIND.get(kind, ENUM_SLIPS if ENUM_KIND in kind else [])
    return [*values, *BY_ARGUMENT.get(argument.name, [])]


KINDS = {a.name: bad_values(a) for a in JOB_ARGUMENTS if a.name not in UNFUZZED}
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


def test_every_declared_argument_is_fuzzed():
    """A new argument of a new kind needs that kind's bad values here."""
    assert all(KINDS.values()), [name for name, values in KINDS.items() if not values]
