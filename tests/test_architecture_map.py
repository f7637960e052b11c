"""``docs/architecture.md`` is the package's map, and it stays true: it names every module, and
its table of layers is the import contract ``make lint`` enforces (``pyproject.toml``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    enforced = [sorted(part.strip() for part in layer.split("|")) for layer in contract["layers"]]
    table = MAP[MAP.index("## The layers") :]
    rows = re.findall(r"^\| (`.*?) \| .* \|$", table, re.M)
    documented = [sorted(re.findall(r"`([\w.]+)`", row)) for row in rows]
    assert documented == enforced


def test_no_test_module_imports_another():
    """What tests share lives in ``tests/support/``, as the map says."""
    importing = [
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("*.py")
        if re.search(r"^\s*(from|import) tests\.(\w+\.)*test_", path.read_text(), re.M)
    ]
    assert importing == []
