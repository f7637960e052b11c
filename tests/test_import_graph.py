"""The package's import graph, function-level and TYPE_CHECKING imports included, has no
cycle: data flows one way (spec → manifest → backend → events → result). The layer rules
themselves are import-linter's contracts in pyproject.toml, run by `make lint`."""

from __future__ import annotations

import grimp

PACKAGE = "airflow_provider_jax"


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.find_modules_directly_imported_by(module)):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (top := stack.pop()) != module:
                group.append(top)
            group.append(module)
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_back_even_inside_functions():
    graph = grimp.build_graph(PACKAGE, exclude_type_checking_imports=False)
    # A package's __init__ importing its own submodules (operators/__init__ re-exporting the
    # operators) is how packages publish names, not a dependency cycle.
    for module in list(graph.modules):
        for child in graph.find_children(module):
            if graph.direct_import_exists(importer=module, imported=child):
                graph.remove_import(importer=module, imported=child)
    assert cycles(graph) == []
