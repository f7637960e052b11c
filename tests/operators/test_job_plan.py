"""The rules between arguments (``job_plan.plan_job``) run at parse and again on each try's
rendered values, before anything is made: a template can render to a value a rule refuses."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator

BASE = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}


def rendered(params: dict[str, Any], **kwargs: Any) -> JaxTpuSliceOperator:
    """The operator as Airflow renders it for a try, with ``params`` (native rendering, as a
    DAG with ``render_template_as_native_obj=True`` renders)."""
    with DAG("native", schedule=None, render_template_as_native_obj=True, params=params):
        op = JaxTpuSliceOperator(**{**BASE, **kwargs})
    op.render_template_fields({"params": params})
    return op


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # A pod's own /tmp is gone with the pod: Kubernetes needs a shared output_dir.
        (
            {"profile_steps": (1, 2), "backend": "kubernetes"},
            "profile_steps write.* no output_dir on Kubernetes",
        ),
        # An elastic job resumes from <output_dir>/checkpoints.
        ({"num_slices": 2, "min_slices": 1}, "min_slices needs output_dir"),
    ],
)
def test_a_rule_refuses_what_a_template_renders_to(kwargs, message):
    op = rendered({"o": None}, output_dir="{{ params.o }}", **kwargs)  # a template at parse
    with pytest.raises(ValueError, match=message):
        op.build_spec(name="x")


def test_the_same_values_pass_when_they_render_to_what_the_rules_take():
    op = rendered({"o": "gs://bkt/run"}, output_dir="{{ params.o }}", num_slices=2, min_slices=1)
    spec = op.build_spec(name="x")
    assert spec.num_slices == 2
    assert op.request().plan.elastic is not None


def test_a_rule_between_program_arguments_after_rendering():
    """entrypoint rendering to None leaves no program: the rule says so, not a later crash."""
    op = rendered({"e": None}, **{**BASE, "entrypoint": "{{ params.e }}"})
    with pytest.raises(ValueError, match="give exactly one of command or entrypoint"):
        op.build_spec(name="x")
