"""The arguments' declaration (``JobArguments``) is what the operators do: their signature,
template fields, docstrings, the spec fields they fill, the routes and docs/arguments.md all
agree with it."""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import datetime
import inspect
import logging
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG, DeadlineAlert, DeadlineReference, SyncCallback, task

from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator, job_arguments
from airflow_provider_jax.operators.argument_docs import PAGE, page
from airflow_provider_jax.operators.argument_signature import stale
from airflow_provider_jax.operators.base_arguments import AirflowArguments
from airflow_provider_jax.operators.job_arguments import (
    ARGUMENTS,
    TEMPLATED,
    JobArguments,
    To,
    declared,
    for_platform,
    routed,
)
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.job_plan import GPU, TPU
from airflow_provider_jax.operators.job_settings import TryState, job_settings
from airflow_provider_jax.operators.rendered_manifest import MANIFEST_FIELD
from airflow_provider_jax.operators.signatures import TemplatedArguments
from airflow_provider_jax.runtime.call import decode_call

# Spec fields each build computes from several arguments or from the try, never one argument.
COMPUTED = {
    "name", "accelerator", "capacity", "image", "command", "env", "resources", "labels",
    "annotations", "node_selector", "security_context", "capacity_choice",
    "active_deadline_seconds", "pathways", "data_inputs", "identity_provider", "unrendered",
    "restart_agent_image", "multi_tier_checkpointing",
}  # fmt: skip
SPEC_DEFAULTS = {"megascale_port"}  # no argument sets it


OPERATORS = [(JaxTpuSliceOperator, TPU), (JaxGpuJobOperator, GPU)]


@pytest.mark.parametrize(("operator", "platform"), OPERATORS)
def test_each_signature_is_its_operators_arguments_in_declaration_order(operator, platform):
    """Every parameter an operator takes by name, type and default, and no other operator's:
    what editors, type checkers and Airflow's default_args see. Airflow's own arguments are
    **kwargs, typed by name (AirflowArguments), so a type checker refuses any other."""
    parameters = inspect.signature(operator.__init__).parameters
    own = [p for p in parameters if p not in ("self", "kwargs")]
    assert own == [f.name for f in for_platform(platform)]
    for f in for_platform(platform):
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert parameters[f.name].default == expected, f.name
        assert parameters[f.name].annotation == JobArguments.__annotations__[f.name], f.name
    assert parameters["kwargs"].annotation == "Unpack[AirflowArguments]"
    # The shared classes have no signature of their own: Airflow's default_args fill the
    # parameters of each class's __init__, and a shared one would give every operator every
    # argument.
    assert "__init__" not in vars(JaxJobOperator) and "__init__" not in vars(TemplatedArguments)
    assert stale() == [], "run make docs"


def test_airflows_own_arguments_are_typed_by_name():
    """AirflowArguments is BaseOperator's signature: a misspelt argument is no key of it."""
    from airflow.sdk import BaseOperator

    airflow = inspect.signature(BaseOperator.__init__).parameters
    names = [n for n, p in airflow.items() if n != "self" and p.kind is not p.VAR_KEYWORD]
    assert list(AirflowArguments.__annotations__) == names
    assert not set(names) & {f.name for f in ARGUMENTS}


def test_default_args_reach_only_the_operators_that_take_them():
    """One DAG's default_args for both platforms: each operator (and decorator) takes its own,
    and the other operator's never reach it."""
    defaults = {"gpus_per_node": 8, "num_nodes": 2, "chips_per_host": 4, "num_slices": 2,
                "gpu_networking": "none", "max_restarts": 5, "image": "img"}  # fmt: skip
    with DAG("both", schedule=None, default_args=defaults):
        tpu = JaxTpuSliceOperator(task_id="tpu", accelerator="tpu-v6e-16", entrypoint="m:f")
        gpu = JaxGpuJobOperator(task_id="gpu", accelerator="h100-80gb-8", entrypoint="m:f")

        @task.jax_tpu(accelerator="tpu-v6e-16")
        def on_tpu() -> None: ...

        @task.jax_gpu(accelerator="h100-80gb-8")
        def on_gpu() -> None: ...

        decorated_tpu, decorated_gpu = on_tpu().operator, on_gpu().operator
    for op in (tpu, decorated_tpu):
        assert (op.arguments.chips_per_host, op.arguments.num_slices) == (4, 2)
        assert (op.arguments.gpus_per_node, op.arguments.gpu_networking) == (None, "auto")
    for op in (gpu, decorated_gpu):
        assert (op.arguments.gpus_per_node, op.arguments.num_nodes) == (8, 2)
        assert op.arguments.gpu_networking == "none"
        assert (op.arguments.chips_per_host, op.arguments.num_slices) == (None, 1)
    assert {op.arguments.max_restarts for op in (tpu, gpu, decorated_tpu, decorated_gpu)} == {5}


@pytest.mark.parametrize(
    ("operator", "given", "message"),
    [
        (JaxGpuJobOperator, {"chips_per_host": 8}, r"has no slices \(chips_per_host\)"),
        (JaxGpuJobOperator, {"pathways": True}, r"has no slices \(pathways\)"),
        (JaxGpuJobOperator, {"num_slices": 2}, r"has no slices \(num_slices\)"),
        (JaxTpuSliceOperator, {"gpus_per_node": 8}, r"has no GPU nodes \(gpus_per_node\)"),
        (JaxTpuSliceOperator, {"gpu_networking": "none"}, r"no GPU nodes \(gpu_networking\)"),
        (JaxTpuSliceOperator, {"gpu_networks": ["a"]}, r"has no GPU nodes \(gpu_networks\)"),
    ],
)
def test_another_operators_argument_is_refused_by_name(operator, given, message):
    base = {"task_id": "t", "entrypoint": "m:f"}
    base["accelerator"] = "h100-80gb-8" if operator is JaxGpuJobOperator else "tpu-v6e-16"
    with pytest.raises(ValueError, match=message):
        operator(**base, **given)


def _annotation(name: str) -> Any:
    """A field's declared type, evaluated where it is declared (its TYPE_CHECKING-only names,
    which no runtime check needs, stand in as Any)."""
    namespace = {**vars(job_arguments), "Asset": Any, "DeadlineAlert": Any, "Secret": Any}
    return eval(JobArguments.__annotations__[name], namespace)


def _members(tp: Any) -> list[Any]:
    """The members of a union (the type itself if it is none)."""
    return (
        list(typing.get_args(tp))
        if isinstance(tp, types.UnionType) or (typing.get_origin(tp) is typing.Union)
        else [tp]
    )


@pytest.mark.parametrize("field", ARGUMENTS, ids=lambda f: f.name)
def test_each_declared_type_says_what_its_check_takes(field):
    """None is taken exactly where the type says ``| None``; an enumeration's type is the
    Literal of its choices; a list of strings is a list or tuple, which a str is not (so a
    type checker refuses ``pip_packages="numpy"``, as the check does)."""
    members = _members(_annotation(field.name))
    kind = declared(field).kind
    assert (type(None) in members) == kind.optional, field.name
    if kind.choices:
        literals = [m for m in members if typing.get_origin(m) is typing.Literal]
        assert [c for m in literals for c in typing.get_args(m)] == list(kind.choices)
    takes_str = str in members or any(
        typing.get_origin(m) is collections.abc.Sequence and typing.get_args(m) == (str,)
        for m in members
    )
    if kind.name.startswith("list of"):
        assert not takes_str, f"{field.name}: a str is no list"


@pytest.mark.parametrize(
    "field", [f for f in ARGUMENTS if not declared(f).kind.optional], ids=lambda f: f.name
)
def test_none_is_refused_where_the_type_has_no_none(field):
    base = {"task_id": "t", "accelerator": "tpu-v6e-16", "entrypoint": "m:f"}
    operator = JaxGpuJobOperator if declared(field).only == GPU else JaxTpuSliceOperator
    if operator is JaxGpuJobOperator:
        base["accelerator"] = "h100-80gb-8"
    with pytest.raises((TypeError, ValueError), match=field.name):
        operator(**{**base, field.name: None})


@pytest.mark.parametrize(("operator", "platform"), OPERATORS)
def test_each_operators_docstring_has_its_arguments(operator, platform):
    for f in for_platform(platform):
        assert f":param {f.name}: {declared(f).doc}" in operator.__doc__
    others = [f for f in ARGUMENTS if declared(f).only not in (None, platform)]
    assert others and not any(f":param {f.name}:" in operator.__doc__ for f in others)


def test_the_template_fields_are_the_declared_ones():
    assert tuple(JaxJobOperator.template_fields) == (*TEMPLATED, MANIFEST_FIELD)


def test_every_spec_field_is_one_argument_or_computed_from_several():
    fields = {f.name for f in dataclasses.fields(JaxJobSpec)}
    assert set(routed(To.SPEC)) | COMPUTED | SPEC_DEFAULTS == fields
    assert not set(routed(To.SPEC)) & COMPUTED


def test_a_declared_spec_argument_reaches_the_spec_unchanged():
    op = JaxTpuSliceOperator(
        task_id="t", accelerator="tpu-v6e-16", image="img", entrypoint="m:f",
        namespace="ml", max_restarts=7, priority_class_name="high", queue_name="q",
        ttl_seconds_after_finished=60, coordinator_port=9000, restart_on_exit_codes=[7],
    )  # fmt: skip
    spec = op.build_spec(name="x", rendered=False)
    for name in routed(To.SPEC):
        assert getattr(spec, name) == getattr(op.arguments, name), name


def test_every_argument_goes_somewhere():
    assert all(declared(f).to for f in ARGUMENTS)


def test_the_arguments_page_is_written_from_the_declaration():
    assert PAGE.read_text() == page(), "docs/arguments.md is stale: run `make docs`"


def test_only_the_accelerator_is_required():
    """Every other argument has a default: a new one without would break every DAG."""
    required = [f.name for f in ARGUMENTS if f.default is dataclasses.MISSING]
    assert required == ["accelerator"]


# Each argument routed to the pods' call, the wait or a try's settings, with a value other than
# its default (and what it needs beside it): the destination's reader must take it.
ALERT = DeadlineAlert(
    reference=DeadlineReference.DAGRUN_QUEUED_AT,
    interval=datetime.timedelta(hours=1),
    callback=SyncCallback("builtins.print"),
)
COMMAND = {"command": ["python3", "t.py"], "entrypoint": None}
OUT = {"output_dir": "/tmp/out"}
SAMPLES: dict[str, tuple[Any, dict[str, Any]]] = {
    # the pods' call
    "entrypoint": ("pkg.mod:other", {}),
    "entrypoint_kwargs": ({"a": 1}, {}),
    "argv": (["--x=1"], {}),
    "initialize_distributed": (False, {}),
    "require_distributed": (True, COMMAND),
    "pip_packages": (["optax"], {}),
    "python": ("python3.12", {}),
    "progress_timeout": (60.0, {}),
    "total_steps": (10, {}),
    "profile_steps": ((1, 2), OUT),
    "debug_dump": (True, OUT),
    "jax_config": ({"jax_debug_nans": True}, {}),
    # the wait
    "poll_interval": (5.0, {}),
    "stream_logs": ("all", {}),
    "checkpoint_warn_after": (60.0, {}),
    "queue_timeout": (600.0, {}),
    "queue_timeout_until": ("admitted", {"queue_name": "q"}),
    "deadline": (ALERT, {}),
    # a try's settings
    "backend": ("local", {}),
    "kubernetes_conn_id": ("k8s_other", {}),
    "deferrable": (True, {}),
    "on_finish_action": ("keep_jobset", {}),
    "project_id": ("p", {}),
    "location": ("us-central1", {}),
    "cluster_name": ("c", {}),
    "gcp_conn_id": ("google_other", {}),
    "impersonation_chain": ("sa@p.iam.gserviceaccount.com", {}),
}
RUNTIME = Path(job_arguments.__file__).parents[1] / "runtime"


def _runtime_reads() -> set[str]:
    """The keys the pods' runtime reads from the call (``call.get("k")``, ``call["k"]``)."""
    keys = set()
    for path in RUNTIME.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            target = key = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "get" and node.args:
                    target, key = node.func.value, node.args[0]
            elif isinstance(node, ast.Subscript):
                target, key = node.value, node.slice
            called = isinstance(target, ast.Name) and target.id == "call"
            if called and isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
    return keys


def _operator(**kwargs: Any) -> JaxTpuSliceOperator:
    with DAG("routes", schedule=None):
        return JaxTpuSliceOperator(**{**BASE, **kwargs})


def _program(op: JaxTpuSliceOperator) -> tuple[list[str], dict[str, str]]:
    spec = op.build_spec(name="x", rendered=False)
    return list(spec.command), dict(spec.env)


def _settings(op: JaxTpuSliceOperator) -> tuple[str, Any]:
    """The backend a try gets, and its settings (what the wait and the backend read)."""
    queued = datetime.datetime(2026, 11, 1, 12, tzinfo=datetime.UTC)
    context: Any = {
        "ti": types.SimpleNamespace(start_date=queued),  # Airflow's, standing in
        "dag_run": types.SimpleNamespace(
            dag_id="d", run_id="r", run_after=queued, logical_date=queued
        ),
    }
    state = TryState(name="x", slices=op.arguments.num_slices)
    settings = job_settings(
        op.arguments, op.plan, state, context, execution_timeout=None, dag=None, log=LOG
    )
    return op.resolved_backend, settings


BASE = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
LOG = logging.getLogger(__name__)
READERS = {To.CALL: _program, To.WATCH: _settings, To.SETTINGS: _settings}


@pytest.mark.parametrize(
    ("to", "name"),
    [(to, name) for to in READERS for name in routed(to)],
    ids=lambda v: v.name if isinstance(v, To) else v,
)
def test_every_routed_argument_has_a_reader(to, name):
    """A value other than the default changes what its destination's reader gives: the pods'
    program (its command and env, which carry the call), or a try's backend and settings (the
    wait's options among them). An option declared but read nowhere fails here."""
    assert name in SAMPLES, f"{name}: give it a sample value in SAMPLES"
    value, beside = SAMPLES[name]
    read = READERS[to]
    assert read(_operator(**beside, **{name: value})) != read(_operator(**beside)), name


def test_the_runtime_reads_every_key_the_call_carries():
    """Every option for the pods travels in the call under a key the runtime reads: one that
    reaches the pods and is ignored there fails here."""
    given = {name: SAMPLES[name][0] for name in routed(To.CALL) if SAMPLES[name][1] != COMMAND}
    op = _operator(**given, **OUT)
    call = decode_call(_program(op)[1])
    unread = set(call) - _runtime_reads()
    assert not unread, f"the call carries {sorted(unread)}, which runtime/ never reads"
    assert {"argv", "jax_config", "total_steps"} <= set(call)  # the options are in it
