"""Every argument of the TPU operator drawn from its kind's bad values, alone and in pairs: each
draw is refused at construction with a ValueError or TypeError that names the argument, or it
builds a JobSet that the pinned JobSet CRD and the pod's own schema accept. Hypothesis draws,
derandomized, so a run is the same on every machine; a failure prints the smallest draw that
fails."""

from __future__ import annotations

import datetime
import math
from typing import Any

import pytest
from airflow.sdk import DAG, DeadlineAlert, DeadlineReference, SyncCallback
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_jax.manifest import pod_schema
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.operators.job_arguments import ARGUMENTS, declared
from tests.support.jobset_schema import jobset_validator

BASE = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
NAN, INF = math.nan, math.inf
NUMBERS = [NAN, INF, -INF, -1, 0, True, False, 2.5, "10", "10\n", 10**12, 1e300]
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
    "duration (seconds > 0, finite, or a timedelta)": [
        *NUMBERS, datetime.timedelta.max, datetime.timedelta(0), -datetime.timedelta(1),
    ],
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
    "JAX options (`jax_*` name → JSON value)": [
        {"enable_x64": True}, {"jax_x": NAN}, {"jax_x": {1}}, {" jax_x": 1}, ["jax_x"], "x",
    ],
    "list of integers": [*LISTS, [0], [256], [42, 42], [-1]],
    "list of strings": [*LISTS, ["", ""], ["numpy\n"], {"a", "b"}, frozenset()],
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
        # What the provider owns, one level down (manifest/ownership.py)
        {"metadata": {"annotations": {"kueue.x-k8s.io/podset-slice-size": "4"}}},
        {"metadata": {"annotations": {"cloud.google.com/gke-tpu-slice-topology": "4x4"}}},
        {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}},
        {"metadata": {"labels": {"app.kubernetes.io/managed-by": "me"}}},
        {"spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"}}},
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
    # Airflow's own objects, wrong as Airflow's serialization sees them
    "deadline": [
        DeadlineAlert(
            reference=DeadlineReference.FIXED_DATETIME("2026-12-01"),
            interval=datetime.timedelta(hours=1),
            callback=SyncCallback("builtins.print"),
        ),
        DeadlineAlert(
            reference=DeadlineReference.DAGRUN_QUEUED_AT,
            interval=datetime.timedelta(days=10**6),
            callback=SyncCallback("builtins.print"),
        ),
        DeadlineAlert(
            reference=DeadlineReference.DAGRUN_QUEUED_AT,
            interval=datetime.timedelta(hours=1),
            callback=SyncCallback("builtins.print", kwargs={"to": {"ops"}}),
        ),
    ],
    "node_selector": [
        {"cloud.google.com/gke-tpu-topology": "2x2"},
        {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"},
    ],
    "annotations": [{"kueue.x-k8s.io/podset-required-topology": "x"}],
}
# Objects the provider's own types parse, not values typed wrong by kind.
UNFUZZED = {"accelerator", "command", "entrypoint", "output_dir", "checkpoint_asset", "pathways",
            "python", "storage", "secrets", "kubernetes_conn_id", "project_id", "location",
            "cluster_name", "gcp_conn_id", "impersonation_chain"}  # fmt: skip


def bad_values(name: str, kind: str) -> list[Any]:
    values = BY_KIND.get(kind, ENUM_SLIPS if ENUM_KIND in kind else [])
    return [*values, *BY_ARGUMENT.get(name, [])]


# The TPU operator's: the GPU operator's own (gpus_per_node, num_nodes) are refused on it.
KINDS = {
    f.name: bad_values(f.name, declared(f).kind.name)
    for f in ARGUMENTS
    if f.name not in UNFUZZED and declared(f).only in (None, "tpu")
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


# Good values that can't meet some others: each draw of two or three of them (with what each
# needs) is refused naming one of them, or renders a valid JobSet.
GOOD_APART: dict[str, dict[str, Any]] = {
    "min_slices": {"num_slices": 2, "min_slices": 1, "output_dir": "/tmp/out"},
    "max_restarts": {"max_restarts": 0},
    "shrink_after": {"shrink_after": 3600},
    "execution_timeout": {"execution_timeout": datetime.timedelta(minutes=30)},
    "require_distributed": {"command": ["python3", "t.py"], "entrypoint": None,
                            "require_distributed": True},
    "pathways": {"pathways": True},
    "initialize_distributed": {"initialize_distributed": True},
    "command": {"command": ["python3", "t.py"], "entrypoint": None},
    "deadline": {"deadline": DeadlineAlert(reference=DeadlineReference.DAGRUN_QUEUED_AT,
                                           interval=datetime.timedelta(hours=1),
                                           callback=SyncCallback("builtins.print"))},
    "stream_logs": {"stream_logs": "none"},
    "dynamic_slicing": {"accelerator": "tpu7x-4x4x8", "dynamic_slicing": True, "queue_name": "q"},
    "profile_steps": {"profile_steps": (1, 2), "output_dir": "/tmp/out"},
    "restart_strategy": {"restart_strategy": "in_place"},
    "local_checkpoint_size": {"local_checkpoint_size": "1Gi"},
}  # fmt: skip


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(st.lists(st.sampled_from(sorted(GOOD_APART)), min_size=2, max_size=3, unique=True))
def test_good_values_that_cant_meet_are_refused_naming_one_of_them(chosen):
    kwargs = dict(BASE)
    for name in chosen:
        kwargs.update(GOOD_APART[name])
    refused_by_name(kwargs, [k for name in chosen for k in GOOD_APART[name]])


@pytest.mark.parametrize("argument", ARGUMENTS)
def test_every_bad_value_of_an_argument_alone(argument):
    """Each value of each kind once, so none is left to chance."""
    for value in KINDS[argument]:
        refused_by_name({**BASE, **NEEDS.get(argument, {}), argument: value}, [argument])


def test_every_declared_argument_is_fuzzed():
    """A new argument of a new kind needs that kind's bad values here."""
    assert all(KINDS.values()), [name for name, values in KINDS.items() if not values]
