"""``docs/arguments.md``, written from the declaration in ``job_arguments`` and the operators'
signatures (each argument's default): ``make docs`` writes it, and a test fails when the page
and the code differ. Imported by neither operator, so a DAG's parse never pays for it."""

from __future__ import annotations

import inspect
from pathlib import Path

from airflow_provider_jax.operators.gpu import JaxGpuJobOperator
from airflow_provider_jax.operators.job_arguments import (
    GPU_ARGUMENTS,
    JOB_ARGUMENTS,
    TPU_ARGUMENTS,
    Argument,
)
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.tpu import JaxTpuSliceOperator

PAGE = Path(__file__).resolve().parents[2] / "docs" / "arguments.md"
INTRO = (
    "Generated from `airflow_provider_jax/operators/job_arguments.py`, where each argument is "
    "declared once, and the operators' signatures; `make docs` writes this page, and a test "
    "fails when it differs from the code. Every value is checked by its kind at parse, and the "
    "error names the argument ([kinds of value](operators.md#kinds-of-value)); a templated "
    "one is checked again once rendered, before anything is created."
)
TABLES = (
    (JaxTpuSliceOperator, TPU_ARGUMENTS, "Its own arguments; `@task.jax_tpu` takes them too."),
    (JaxGpuJobOperator, GPU_ARGUMENTS, "Its own arguments; `@task.jax_gpu` takes them too."),
    (
        JaxJobOperator,
        JOB_ARGUMENTS,
        "Both operators take these, and so do both decorators, but for `command`, `entrypoint` "
        "and `entrypoint_kwargs`: a decorated function is itself the program.",
    ),
)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _row(argument: Argument, parameter: inspect.Parameter) -> str:
    default = parameter.default
    shown = "required" if default is inspect.Parameter.empty else f"`{default!r}`"
    templated = "yes" if argument.templated else ""
    return (
        f"| `{argument.name}` | {_cell(argument.kind.name)} | {_cell(shown)} | {templated} "
        f"| {_cell(argument.doc)} |"
    )


def page() -> str:
    out = ["# Arguments", "", INTRO]
    for operator, arguments, intro in TABLES:
        parameters = inspect.signature(operator.__init__).parameters
        title = "Both operators" if operator is JaxJobOperator else operator.__name__
        out += ["", f"## {title}", "", intro, ""]
        out += ["| argument | kind | default | templated | meaning |", "|---|---|---|---|---|"]
        out += [_row(a, parameters[a.name]) for a in arguments]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    PAGE.write_text(page())
