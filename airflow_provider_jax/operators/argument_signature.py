"""The JAX operators' signatures, written from the declaration (``JobArguments``) into
``signatures.py``: each operator's ``__init__`` takes the arguments it takes (the shared ones
and its own ``only=``), by name, with their types and defaults, and ``**kwargs`` typed as
Airflow's own ``BaseOperator`` arguments (``base_arguments.py``, written here from Airflow's
signature); a property for each templated argument, which Airflow renders as an attribute.
So an editor, a type checker and Airflow's ``default_args`` (applied to the parameters a
signature has) see each operator's arguments and no other's, a type checker refuses a misspelt
or another operator's argument, and "go to definition" leads from a parameter to the field
that declares it and on to every use. ``make docs`` writes both files; a test fails while one
is stale. The operators (``tpu.py``, ``gpu.py``) subclass their signature.

    python -m airflow_provider_jax.operators.argument_signature [--check]
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from airflow_provider_jax.operators import job_arguments
from airflow_provider_jax.operators.job_arguments import TEMPLATED, JobArguments, for_platform
from airflow_provider_jax.operators.job_plan import GPU, TPU

HERE = Path(__file__).parent
SIGNATURES = HERE / "signatures.py"
BASE_ARGUMENTS = HERE / "base_arguments.py"
# Each operator's signature class, which its class (tpu.py, gpu.py) subclasses.
CLASSES = {TPU: "TpuSliceSignature", GPU: "GpuJobSignature"}
TEMPLATED_CLASS = "TemplatedArguments"
_BUILTINS = {"None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict", "set"}
_NAME = re.compile(r"[A-Za-z_][\w.]*")


def _names(annotation: str) -> set[str]:
    """The names an annotation's text uses (the first part of a dotted one)."""
    return {n.split(".")[0] for n in _NAME.findall(annotation)} - _BUILTINS


def signatures() -> str:
    """``signatures.py``: the templated arguments' properties, then each operator's
    ``__init__``: its arguments, then Airflow's."""
    annotations = JobArguments.__annotations__
    names = {"Unpack", "AirflowArguments"}
    lines = [
        f"class {TEMPLATED_CLASS}(JaxJobOperator):",
        '    """The templated arguments, as the attributes Airflow renders: each reads and',
        '    writes the operator\'s arguments."""',
    ]
    for name in TEMPLATED:
        kind = annotations[name]
        names |= _names(kind)
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
    for platform, cls in CLASSES.items():
        params, passed = [], []
        for f in for_platform(platform):
            default = "" if f.default is dataclasses.MISSING else f" = {_source(f.default)}"
            params.append(f"        {f.name}: {annotations[f.name]}{default},")
            passed.append(f"                {f.name}={f.name},")
            names |= _names(annotations[f.name])
        lines += [
            "",
            "",
            f"class {cls}({TEMPLATED_CLASS}):",
            f'    """The arguments of the {platform.upper()} operator: the shared ones and its own."""',
            "",
            "    def __init__(",
            "        self,",
            "        *,",
            *params,
            "        **kwargs: Unpack[AirflowArguments],",
            "    ) -> None:",
            "        self._start(",
            "            JobArguments(",
            *passed,
            "            ),",
            "            kwargs,",
            "        )",
        ]
    origins = {
        **_imported(job_arguments),
        "Unpack": ("typing", "Unpack"),
        "AirflowArguments": ("airflow_provider_jax.operators.base_arguments", "AirflowArguments"),
    }
    head = [
        '"""The JAX operators\' signatures, written by ``make docs`` (``argument_signature.py``)',
        "from the declaration (``JobArguments``); do not edit. Each operator's ``__init__``",
        "takes its own arguments by name, type and default, and Airflow's as typed ``**kwargs``;",
        'each templated argument is a property Airflow renders."""',
        "",
        "from __future__ import annotations",
        "",
        "import dataclasses",
        "from typing import TYPE_CHECKING",
        "",
        "from airflow_provider_jax.operators.job_arguments import JobArguments",
        "from airflow_provider_jax.operators.job_operator import JaxJobOperator",
        "",
        *_type_checking_imports(origins[name] for name in sorted(names)),
        "",
        "",
    ]
    return "\n".join([*head, *lines]) + "\n"


def base_arguments() -> str:
    """``base_arguments.py``: Airflow's ``BaseOperator.__init__`` parameters as a TypedDict,
    each with Airflow's own type, imported as Airflow's module imports it."""
    from airflow.sdk import BaseOperator
    from airflow.sdk.bases import operator as airflow_operator

    origins = _imported(airflow_operator)
    fields, names = [], set()
    for name, parameter in inspect.signature(BaseOperator.__init__).parameters.items():
        if name == "self" or parameter.kind is parameter.VAR_KEYWORD:
            continue
        annotation = str(parameter.annotation)
        if annotation.startswith("None | "):  # the same type, None last as ruff writes it
            annotation = f"{annotation.removeprefix('None | ')} | None"
        names |= _names(annotation)
        required = parameter.default is parameter.empty
        fields.append(f"    {name}: {f'Required[{annotation}]' if required else annotation}")
    head = [
        '"""Airflow\'s own operator arguments (``BaseOperator.__init__``\'s), which the JAX',
        "operators take as ``**kwargs`` and pass on: a TypedDict, so a type checker refuses a",
        "misspelt argument, or another operator's. Written by ``make docs``",
        "(``argument_signature.py``) from the installed Airflow's signature; a test fails while",
        'it is stale."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING, Required, TypedDict",
        "",
        *_type_checking_imports(origins[name] for name in sorted(names)),
        "",
        "",
        "class AirflowArguments(TypedDict, total=False):",
        '    """``BaseOperator``\'s keyword arguments, each with its type."""',
        "",
        *fields,
    ]
    return "\n".join(head) + "\n"


def _imported(module: ModuleType) -> dict[str, tuple[str, str | None]]:
    """Each name a module imports at its top level (at run time or for the type checker),
    with where from: ``(module, name)``, or ``(module, None)`` for ``import module``; a name
    the module assigns there itself (a type alias) comes from the module."""
    origins: dict[str, tuple[str, str | None]] = {}
    statements = list(ast.parse(Path(str(module.__file__)).read_text()).body)
    while statements:
        node = statements.pop(0)
        if isinstance(node, ast.If | ast.Try):  # if TYPE_CHECKING:, try: import ... except
            statements += [*node.body, *node.orelse]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                origins[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                origins[(alias.asname or alias.name).split(".")[0]] = (alias.name, None)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    origins.setdefault(target.id, (module.__name__, target.id))
    return origins


def _type_checking_imports(origins: Iterable[tuple[str, str | None]]) -> list[str]:
    """An ``if TYPE_CHECKING:`` block importing ``origins``, sorted as ruff's isort sorts:
    the standard library, then other packages, then this one; ``import x`` before
    ``from x import``; constants, classes, then the rest."""
    sections: dict[int, tuple[set[str], dict[str, set[str]]]] = {}
    for module, name in origins:
        top = module.split(".")[0]
        section = 0 if top in sys.stdlib_module_names else 2 if top == "airflow_provider_jax" else 1
        plain, froms = sections.setdefault(section, (set(), {}))
        if name is None:
            plain.add(module)
        else:
            froms.setdefault(module, set()).add(name)
    lines = ["if TYPE_CHECKING:"]
    for section in sorted(sections):
        plain, froms = sections[section]
        if len(lines) > 1:
            lines.append("")
        lines += [f"    import {module}" for module in sorted(plain)]
        for module in sorted(froms):
            names = sorted(froms[module], key=_isort_key)
            line = f"    from {module} import {', '.join(names)}"
            if len(line) > 100:
                line = "\n".join(
                    [f"    from {module} import (", *(f"        {n}," for n in names), "    )"]
                )
            lines.append(line)
    return lines


def _isort_key(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[0].isupper() else 2
    return kind, name


def _source(value: object) -> str:
    """A default as ruff formats it: strings in double quotes."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def written() -> dict[Path, str]:
    """Every file this writes, with its text as it should be."""
    return {SIGNATURES: signatures(), BASE_ARGUMENTS: base_arguments()}


def stale() -> list[Path]:
    """The files that differ from what ``make docs`` would write."""
    return [
        path for path, text in written().items() if not path.exists() or path.read_text() != text
    ]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        for path in stale():
            print(f"{path} is stale: run make docs", file=sys.stderr)
        return 1 if stale() else 0
    for path, text in written().items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
