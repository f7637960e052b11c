"""``docs/arguments.md``, written from the declaration (``JobArguments``): ``make docs`` writes
it, and a test fails when the page and the code differ. Imported by neither operator, so a
DAG's parse never pays for it."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from airflow_provider_jax.operators.job_arguments import ARGUMENTS, declared
from airflow_provider_jax.operators.job_plan import GPU, TPU

PAGE = Path(__file__).resolve().parents[2] / "docs" / "arguments.md"
INTRO = (
    "Generated from `airflow_provider_jax/operators/job_arguments.py`, where each argument is "
    "declared once as a typed field of `JobArguments` (its type and default are the "
    "operators' signature); `make docs` writes this page, and a test fails when it differs "
    "from the code. Every value is checked by its kind at parse, and the error names the "
    "argument ([kinds of value](operators.md#kinds-of-value)); a templated one is checked "
    "again once rendered, before anything is created. *Goes to* is the one place that reads "
    "it: the job spec, the runtime's call in every pod, how the job is waited on, the "
    "backend's settings, or the operator's plan."
)
TABLES = (
    ("JaxTpuSliceOperator", TPU, "Its own arguments; `@task.jax_tpu` takes them too."),
    ("JaxGpuJobOperator", GPU, "Its own arguments; `@task.jax_gpu` takes them too."),
    (
        "Both operators",
        None,
        "Both operators take these, and so do both decorators, but for `command`, `entrypoint` "
        "and `entrypoint_kwargs`: a decorated function is itself the program.",
    ),
)
_GOES_TO = {"TASK": "plan", "SPEC": "spec", "CALL": "call", "WATCH": "wait", "SETTINGS": "backend"}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _row(field: dataclasses.Field[Any]) -> str:
    said = declared(field)
    default = field.default
    shown = "required" if default is dataclasses.MISSING else f"`{default!r}`"
    templated = "yes" if said.templated else ""
    goes = ", ".join(_GOES_TO[to.name] for to in said.to if to.name is not None)
    return (
        f"| `{field.name}` | {_cell(said.kind.name)} | {_cell(shown)} | {templated} | {goes} "
        f"| {_cell(said.doc)} |"
    )


def page() -> str:
    out = ["# Arguments", "", INTRO]
    for title, only, intro in TABLES:
        rows = [f for f in ARGUMENTS if declared(f).only == only]
        if only is None:  # the shared ones; accelerator and num_slices are in both tables too
            rows = [f for f in rows if f.name not in ("accelerator", "num_slices")]
        else:
            shared = [f for f in ARGUMENTS if f.name in ("accelerator", "num_slices")]
            rows = [*(f for f in shared if not (only == GPU and f.name == "num_slices")), *rows]
        out += ["", f"## {title}", "", intro, ""]
        out += [
            "| argument | kind | default | templated | goes to | meaning |",
            "|---|---|---|---|---|---|",
        ]
        out += [_row(f) for f in rows]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if "--check" in argv:
        return 0 if PAGE.read_text() == page() else 1
    PAGE.write_text(page())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
