"""A mapped task's arguments are checked when the DAG is parsed as far as they are known
there: ``partial()``'s values and ``expand()``'s literal lists each through its kind, and
each literal combination through the operator's construction (the rules between arguments,
the JobSet). Values mapped from an upstream task are known only when it runs."""

from __future__ import annotations

import re
import runpy
import warnings
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from airflow_provider_jax.operators.mapped_arguments import MAX_COMBINATIONS
from tests.support.docs_pages import samples

TPU = {"task_id": "m", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}


def mapped(partial: dict[str, Any], operator: type = JaxTpuSliceOperator, **expand: Any) -> Any:
    with DAG("mapped", schedule=None):
        return operator.partial(**partial).expand(**expand)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"num_slices": "2"}, "num_slices must be an integer >= 1, got '2'"),
        ({"stream_logs": "bogus"}, "stream_logs must be one of"),
        ({"secrets": 5}, "secrets must be a list"),
        ({"accelerator": "{{ params.a }}"}, "accelerator is not a templated field"),
        ({"labels": {"{{ params.k }}": "v"}}, "labels has the key .* never its keys"),
        ({"gpus_per_node": 8}, r"JaxTpuSliceOperator has no GPU nodes \(gpus_per_node\)"),
    ],
)
def test_a_partial_value_is_checked_by_its_kind(given, message):
    with pytest.raises((ValueError, TypeError), match=message):
        mapped({**TPU, **given}, env=[{"A": "b"}])


@pytest.mark.parametrize(
    ("expand", "message"),
    [
        ({"num_slices": [2, "3"]}, "num_slices must be an integer >= 1, got '3'"),
        ({"stream_logs": ["leader", "bogus"]}, "stream_logs must be one of"),
        ({"env": [{"A": "b"}, 5]}, "env must be a mapping"),
        ({"max_restarts": [None]}, "max_restarts must not be None"),
    ],
)
def test_each_item_of_a_literal_expand_list_is_checked_by_its_kind(expand, message):
    with pytest.raises((ValueError, TypeError), match=message):
        mapped(TPU, **expand)


def test_a_rule_between_arguments_is_checked_for_each_literal_combination():
    """partial() and expand() each hold good values; one combination cannot run."""
    with pytest.raises(ValueError, match="mapped with chips_per_host=3: .*3 chips per host"):
        mapped(TPU, chips_per_host=[4, 3])
    with pytest.raises(ValueError, match="give exactly one of command or entrypoint"):
        mapped({**TPU, "command": ["python3", "t.py"]}, env=[{"A": "b"}])
    with pytest.raises(ValueError, match="min_slices needs output_dir"):
        mapped({**TPU, "num_slices": 2}, min_slices=[1])
    with pytest.raises(ValueError, match=r"has no slices \(num_slices\)"):
        mapped({**TPU, "accelerator": "h100-80gb-8"}, JaxGpuJobOperator, num_slices=[2])


def test_expand_kwargs_of_literal_mappings_is_checked_too():
    literal = [{"min_slices": 1, "output_dir": "/tmp/out"}, {"min_slices": 1}]
    with pytest.raises(ValueError, match="min_slices needs output_dir"), DAG("m", schedule=None):
        JaxTpuSliceOperator.partial(**TPU, num_slices=2).expand_kwargs(literal)


def test_dag_default_args_meet_the_mapped_values():
    """The combination is the task a worker would make, the DAG's default_args and all."""
    with DAG("mapped", schedule=None, default_args={"output_dir": "/tmp/out"}):
        JaxTpuSliceOperator.partial(**TPU, num_slices=2).expand(min_slices=[1])


def test_values_from_an_upstream_task_wait_until_it_runs():
    """An XComArg's values are unknown at parse: the mapping stands, its checks come later."""
    with DAG("mapped", schedule=None):

        @task
        def settings() -> list[dict[str, str]]:
            return [{"A": "b"}]

        op = JaxTpuSliceOperator.partial(**TPU).expand(env=settings())
    assert op.task_id == "m"


def test_a_large_sweep_is_checked_item_by_item_and_its_first_combinations_whole():
    lists = {"entrypoint_kwargs": [{"lr": i} for i in range(100)], "max_restarts": [1, 2]}
    mapped(TPU, **lists)
    assert max(len(v) for v in lists.values()) // 4 <= MAX_COMBINATIONS  # bounded parse cost
    with pytest.raises(ValueError, match=r"entrypoint_kwargs\['lr'\] must be JSON"):
        mapped(TPU, entrypoint_kwargs=[{"lr": 0.1}] * 99 + [{"lr": float("nan")}])


def test_a_partial_leaves_no_unmapped_task_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mapped(TPU, env=[{"A": "b"}])


def _sweep() -> str:
    """docs/operators.md's sweep, as users copy it."""
    (code,) = [c for where, c in samples("python") if ".partial(" in c and "operators.md" in where]
    return code


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('queue_name="research"', 'queue_name="Research"'), "queue_name must be a DNS-1123"),
        (('{"learning_rate": lr}', '{"learning_rate": float("nan")}'), "must be JSON"),
        (('entrypoint="my_pkg.train:main",', ""), "give exactly one of command or entrypoint"),
    ],
)
def test_the_docs_sweep_is_checked_at_parse(tmp_path: Path, edit, message):
    """The sweep runs as the docs give it (tests/test_docs.py); a value made wrong in its
    partial() or its expand() list fails the DAG file's parse, naming it."""
    old, new = edit
    code = _sweep()
    assert old in code
    dag_file = tmp_path / "sweep.py"
    dag_file.write_text(code.replace(old, new))
    with pytest.raises((ValueError, TypeError), match=re.compile(message)):
        runpy.run_path(str(dag_file))
