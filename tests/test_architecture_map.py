"""``docs/architecture.md`` is the package's map, and it stays true: it names every module, and
its table of layers is the import contract ``make lint`` enforces (``pyproject.toml``)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

import airflow_provider_jax

PACKAGE = Path(airflow_provider_jax.__file__).parent
REPO = PACKAGE.parent
MAP = (REPO / "docs" / "architecture.md").read_text()


def modules() -> list[str]:
    """Every module and package of the provider, as a path below the package."""
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    )


def mapped() -> list[str]:
    """The modules and packages the tree in "## The tree" lists, as paths below the package:
    a name that ends in ``/`` is a folder (its ``__init__.py``), each level indented by two
    spaces; a description's later lines sit further right."""
    block = MAP[MAP.index("## The tree") :].split("```")[1]
    lines = block.strip("\n").splitlines()[1:]  # the first line is the package itself
    folders: list[str] = []
    paths: list[str] = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        entry = re.match(r"(\w+(?:\.py|/))(\s|$)", line.lstrip(" "))
        if indent >= 12 or entry is None:
            continue
        depth = indent // 2 - 1
        del folders[depth:]
        name = entry.group(1)
        if name.endswith("/"):
            folders.append(name)
            paths.append("".join(folders) + "__init__.py")
        else:
            paths.append("".join(folders) + name)
    return sorted(paths)


def test_the_map_names_every_module():
    """The tree lists every module once, and none that is gone."""
    assert mapped() == modules()


def test_the_layers_table_is_the_import_contract():
    """Row for row, and with nothing ignored: not even an import for the type checker only."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["tool"]["importlinter"]["exclude_type_checking_imports"] is False
    assert not any("ignore_imports" in c for c in config["tool"]["importlinter"]["contracts"])
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    enforced = [sorted(part.strip() for part in layer.split("|")) for layer in contract["layers"]]
    table = MAP[MAP.index("## The layers") :]
    rows = re.findall(r"^\| (`.*?) \| .* \|$", table, re.M)
    documented = [sorted(re.findall(r"`([\w.]+)`", row)) for row in rows]
    assert documented == enforced


def imported(source: str, package: list[str]) -> set[str]:
    """Every module ``source`` (a module of ``package``) imports, by its absolute name:
    ``import x``, ``from x import y`` (``x`` and ``x.y``, which may be a module), relative
    imports resolved against the package, and a constant name given to
    ``importlib.import_module`` or ``__import__``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names |= {module, *(f"{module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Call) and node.args:
            called = getattr(node.func, "attr", getattr(node.func, "id", None))
            first = node.args[0]
            if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
                names.add(str(first.value))
    return names


def is_test_module(name: str) -> bool:
    module = REPO.joinpath(*name.split(".")).with_suffix(".py")
    return module.name.startswith("test_") and module.is_file()


def test_no_test_module_imports_another():
    """What tests share lives in ``tests/support/``, as the map says: no test module imports
    another, however it is spelt."""
    importing = {
        str(path.relative_to(REPO)): sorted(
            filter(
                is_test_module, imported(path.read_text(), list(path.relative_to(REPO).parts[:-1]))
            )
        )
        for path in (REPO / "tests").rglob("*.py")
    }
    assert {path: names for path, names in importing.items() if names} == {}


@pytest.mark.parametrize(
    "line",
    [
        "import tests.operators.test_job_arguments",
        "from tests.operators.test_job_arguments import BASE",
        "from tests.operators import test_job_arguments",
        "from .operators import test_job_arguments",
        "from . import test_architecture_map",
        "importlib.import_module('tests.operators.test_job_arguments')",
    ],
)
def test_an_import_of_a_test_module_is_seen_however_spelt(line):
    """As a module of ``tests/`` would write it."""
    assert any(map(is_test_module, imported(f"import importlib\n{line}\n", ["tests"]))), line
