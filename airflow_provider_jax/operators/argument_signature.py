"""The JAX operators' ``__init__`` signature, written from the declaration (``JobArguments``)
into ``job_operator.py`` between two marker lines, with a property for each templated
argument: every parameter by name, with its type and default, so an editor, a type checker and
Airflow's ``default_args`` see each one, and "go to definition" leads from a parameter to the
field that declares it and on to every use. ``make docs`` writes it; a test fails while it is
stale.

    python -m airflow_provider_jax.operators.argument_signature [--check]
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from airflow_provider_jax.operators.job_arguments import ARGUMENTS, TEMPLATED, JobArguments

OPERATOR = Path(__file__).with_name("job_operator.py")
BEGIN = "    # --- begin: written by argument_signature.py from JobArguments; do not edit ---"
END = "    # --- end: written by argument_signature.py ---"


def generated() -> str:
    """The block between the markers."""
    annotations = JobArguments.__annotations__
    params, passed = [], []
    for f in ARGUMENTS:
        default = "" if f.default is dataclasses.MISSING else f" = {_source(f.default)}"
        params.append(f"        {f.name}: {annotations[f.name]}{default},")
        passed.append(f"                {f.name}={f.name},")
    lines = [
        BEGIN,
        "    def __init__(",
        "        self,",
        "        *,",
        *params,
        "        **kwargs: Any,",
        "    ) -> None:",
        "        self._start(",
        "            JobArguments(",
        *passed,
        "            ),",
        "            kwargs,",
        "        )",
    ]
    for name in TEMPLATED:  # Airflow renders them as attributes of the operator
        kind = annotations[name]
        lines += [
            "",
            "    @property",
            f"    def {name}(self) -> {kind}:",
            f"        return self.arguments.{name}",
            "",
            f"    @{name}.setter",
            f"    def {name}(self, value: {kind}) -> None:",
            f"        self.arguments = dataclasses.replace(self.arguments, {name}=value)",
        ]
    return "\n".join([*lines, "", END])  # ruff's blank line after a method


def _source(value: object) -> str:
    """A default as ruff formats it: strings in double quotes."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def written(source: str) -> str:
    """``source`` (``job_operator.py``) with the block written anew."""
    start, end = source.index(BEGIN), source.index(END) + len(END)
    return source[:start] + generated() + source[end:]


def main(argv: list[str]) -> int:
    source = OPERATOR.read_text()
    fresh = written(source)
    if "--check" in argv:
        if fresh != source:
            print(f"{OPERATOR} is stale: run make docs", file=sys.stderr)
            return 1
        return 0
    OPERATOR.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
