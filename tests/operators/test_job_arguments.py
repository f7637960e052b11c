"""The arguments' declaration (``JobArguments``) is what the operators do: their signature,
template fields, docstrings, the spec fields they fill, the routes and docs/arguments.md all
agree with it."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from airflow_provider_jax.operators.argument_docs import PAGE, page
from airflow_provider_jax.operators.argument_signature import OPERATOR, written
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
from airflow_provider_jax.operators.rendered_manifest import MANIFEST_FIELD

# Spec fields each build computes from several arguments or from the try, never one argument.
COMPUTED = {
    "name", "accelerator", "capacity", "image", "command", "env", "resources", "labels",
    "annotations", "node_selector", "security_context", "capacity_choice",
    "active_deadline_seconds", "pathways", "data_inputs", "identity_provider", "unrendered",
    "restart_agent_image", "multi_tier_checkpointing",
}  # fmt: skip
SPEC_DEFAULTS = {"megascale_port"}  # no argument sets it


def test_the_signature_is_the_declaration_in_its_order():
    """Every parameter by name, type and default: what editors, type checkers and Airflow's
    default_args see."""
    parameters = inspect.signature(JaxJobOperator.__init__).parameters
    own = [p for p in parameters if p not in ("self", "kwargs")]
    assert own == [f.name for f in ARGUMENTS]
    for f in ARGUMENTS:
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert parameters[f.name].default == expected, f.name
        assert parameters[f.name].annotation == JobArguments.__annotations__[f.name], f.name
    assert OPERATOR.read_text() == written(OPERATOR.read_text()), "run make docs"


@pytest.mark.parametrize(("operator", "platform"), [(JaxTpuSliceOperator, TPU),
                                                    (JaxGpuJobOperator, GPU)])  # fmt: skip
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
        ttl_seconds_after_finished=60, coordinator_port=9000, gpu_networks=["a", "b"],
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
