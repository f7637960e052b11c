"""The shape of each operator argument: a mapping where a mapping is wanted, a list where a
list is. Python would take a string for either (``pip_packages="numpy"`` is five packages,
``dict("privileged")`` a confusing ValueError), so each is refused by name instead. A Jinja
string in a templated field is let through: it is checked again once rendered."""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, Sequence, ValuesView
from typing import Any

from airflow_provider_jax.arguments import is_template


def as_mapping(
    argument: str, value: Any, *, templated: bool = False, optional: bool = False
) -> Any:
    """``value`` as a dict (``None`` is empty, or stays ``None`` if ``optional``), or a
    template string left for later."""
    if value is None:
        return None if optional else {}
    if templated and is_template(value):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{argument} must be a mapping (a dict), got {type(value).__name__} {value!r}."
        )
    return dict(value)


# Collections with no order of their own: a list argument's order is what the job gets (a
# process's argv, the GPU networks with eth0 first, a delegation chain), and a set's order
# may differ between the parse that checks the JobSet and the run that submits it.
_UNORDERED = (set, frozenset, KeysView, ValuesView, ItemsView)


def as_list(
    argument: str, value: Any, item: type, *, templated: bool = False, example: str = "[...]"
) -> Any:
    """``value`` as a list whose items are ``item``: a string is not a list of strings, and a
    set, which has no order, is not a list either."""
    if value is None:
        return []
    if templated and is_template(value):
        return value
    if isinstance(value, _UNORDERED):
        raise TypeError(
            f"{argument} must be a list or tuple: a {type(value).__name__} has no order, so "
            "the job could get its items in another order in each process, or at each parse."
        )
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise TypeError(
            f"{argument} must be a list (e.g. {example}), got {type(value).__name__} {value!r}."
        )
    items = list(value)
    for i, entry in enumerate(items):
        if not isinstance(entry, item) or (isinstance(entry, bool) and item is int):
            got = f"{type(entry).__name__} {entry!r}"
            raise TypeError(f"{argument}[{i}] must be of type {item.__name__}, got {got}.")
    return items
