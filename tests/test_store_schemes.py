"""One place per store: only the store drivers and their registries (``runtime/stores/`` for
the pods, ``stores/`` for the Airflow side) know a scheme. Every other module of the package
asks a registry for a location's driver, so none compares a scheme, tests a string for one,
or imports a driver; this reads each module's syntax tree for any of that."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from airflow_provider_jax import stores
from airflow_provider_jax.runtime import stores as runtime_stores

PACKAGE = Path(stores.__file__).parents[1]
REGISTRIES = (PACKAGE / "stores", PACKAGE / "runtime" / "stores")
DRIVER_MODULES = {
    *(type(driver).__module__ for driver in runtime_stores.DRIVERS.values()),
    *(driver.__module__ for driver in stores.DRIVERS.values()),
}
SCHEMES = {*stores.DRIVERS, *runtime_stores.DRIVERS}
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
BANNED_NAMES = {"is_gcs", "is_gcs_uri", "GCS_SCHEME", "GCS", "LOCAL", "SCHEME"}


def _names_a_scheme(node: ast.AST) -> bool:
    """``x.scheme`` or ``scheme``, a scheme's name (``"gs"``), or a URI's start (``"gs://"``)."""
    if isinstance(node, ast.Attribute) and node.attr == "scheme":
        return True
    if isinstance(node, ast.Name) and node.id == "scheme":
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in SCHEMES or bool(URI.match(node.value))
    return False


def scheme_tests(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module compares a scheme, tests a string's start for one, names a scheme's
    constant, or imports a driver module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            _names_a_scheme(side) for side in [node.left, *node.comparators]
        ):
            found.append((node.lineno, "compares a scheme"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "removeprefix", "partition", "split")
            and any(_names_a_scheme(arg) for arg in node.args)
        ):
            found.append((node.lineno, f"tests a string for a scheme ({node.func.attr})"))
        elif (isinstance(node, ast.Name) and node.id in BANNED_NAMES) or (
            isinstance(node, ast.Attribute) and node.attr in BANNED_NAMES
        ):
            name = node.id if isinstance(node, ast.Name) else node.attr
            found.append((node.lineno, f"names {name}"))
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            if imported & DRIVER_MODULES:
                found.append((node.lineno, f"imports a driver ({node.module})"))
            if named := {a.name for a in node.names} & BANNED_NAMES:
                found.append((node.lineno, f"imports {', '.join(sorted(named))}"))
        elif isinstance(node, ast.Import) and {a.name for a in node.names} & DRIVER_MODULES:
            found.append((node.lineno, "imports a driver"))
    return found


def outside_the_registries() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*.py")
        if not any(p.is_relative_to(folder) for folder in REGISTRIES)
    )


def test_only_the_drivers_and_their_registries_know_a_scheme() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in outside_the_registries()
        for line, what in scheme_tests(ast.parse(path.read_text()))
    ]
    assert offenders == [], "ask the registry for the location's driver:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "code",
    [
        "where.scheme == 'gs'",
        "if location.scheme != LOCAL: pass",
        "value.startswith('gs://')",
        "'gs://' in value",
        "Location.is_gcs_uri(value)",
        "data.is_gcs",
        "from airflow_provider_jax.runtime.location import GCS",
        "from airflow_provider_jax.runtime.stores.gcs import list_objects",
        "from airflow_provider_jax.stores import gcs",
        "import airflow_provider_jax.stores.local",
    ],
)
def test_each_way_of_knowing_a_scheme_is_caught(code: str) -> None:
    assert scheme_tests(ast.parse(code)), code


def test_messages_and_docs_may_show_a_location() -> None:
    code = "raise ValueError(f\"give output_dir='gs://bucket/...', got {value!r}\")"
    assert scheme_tests(ast.parse(code)) == []
