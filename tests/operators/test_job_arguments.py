"""The arguments' declaration is what the operators do: their signatures, template fields,
docstrings, the spec fields they fill and docs/arguments.md all agree with it."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from airflow_provider_jax.operators.argument_docs import PAGE, page
from airflow_provider_jax.operators.job_arguments import (
    GPU_ARGUMENTS,
    JOB_ARGUMENTS,
    SPEC_FIELDS,
    TEMPLATED,
    TPU_ARGUMENTS,
)
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.rendered_manifest import MANIFEST_FIELD

# Spec fields each build computes from several arguments or from the try, never one argument.
COMPUTED = {
    "name", "image", "command", "env", "resources", "labels", "annotations", "capacity_choice",
    "active_deadline_seconds", "pathways", "data_inputs", "identity_provider", "unrendered",
    "restart_agent_image", "multi_tier_checkpointing",
}  # fmt: skip
SPEC_DEFAULTS = {"megascale_port"}  # no argument sets it


@pytest.mark.parametrize(
    ("operator", "arguments"),
    [(JaxJobOperator, JOB_ARGUMENTS), (JaxTpuSliceOperator, TPU_ARGUMENTS),
     (JaxGpuJobOperator, GPU_ARGUMENTS)],
)  # fmt: skip
def test_each_signature_is_the_declaration_in_its_order(operator, arguments):
    own = [
        p for p in inspect.signature(operator.__init__).parameters if p not in ("self", "kwargs")
    ]
    assert own == [a.name for a in arguments]
    for argument in arguments:
        assert f":param {argument.name}: {argument.doc}" in operator.__doc__


def test_the_template_fields_are_the_declared_ones():
    assert tuple(JaxJobOperator.template_fields) == (*TEMPLATED, MANIFEST_FIELD)


def test_every_spec_field_is_one_argument_or_computed_from_several():
    fields = {f.name for f in dataclasses.fields(JaxJobSpec)}
    assert set(SPEC_FIELDS) | COMPUTED | SPEC_DEFAULTS == fields
    assert not set(SPEC_FIELDS) & COMPUTED


def test_a_declared_spec_argument_reaches_the_spec_unchanged():
    op = JaxTpuSliceOperator(
        task_id="t", accelerator="tpu-v6e-16", image="img", entrypoint="m:f",
        namespace="ml", max_restarts=7, priority_class_name="high", queue_name="q",
        ttl_seconds_after_finished=60, coordinator_port=9000, gpu_networks=["a", "b"],
    )  # fmt: skip
    spec = op.build_spec(name="x", rendered=False)
    for name in SPEC_FIELDS:
        assert getattr(spec, name) == getattr(op, name), name


def test_the_arguments_page_is_written_from_the_declaration():
    assert PAGE.read_text() == page(), "docs/arguments.md is stale: run `make docs`"
