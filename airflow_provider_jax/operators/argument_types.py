"""The shape of each operator argument: a mapping where a mapping is wanted, a list where a
list is. Python would take a string for either (``pip_packages="numpy"`` is five packages,
``dict("privileged")`` a confusing ValueError), so each is refused by name instead. A Jinja
string in a templated field is let through: it is checked again once rendered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def as_list(argument: str, value: Any, item: type, *, templated: bool = False) -> Any:
    """``value`` as a list whose items are ``item``; a string is not a list of strings."""
    if value is None:
        return []
    if templated and is_template(value):
        return value
    if isinstance(value, str | bytes | Mapping) or not isinstance(
        value, Sequence | set | frozenset
    ):
        example = "['numpy==2.1']" if argument == "pip_packages" else "[...]"
        raise TypeError(
            f"{argument} must be a list (e.g. {example}), got {type(value).__name__} {value!r}."
        )
    items = list(value)
    for i, entry in enumerate(items):
        if not isinstance(entry, item) or (isinstance(entry, bool) and item is int):
            got = f"{type(entry).__name__} {entry!r}"
            raise TypeError(f"{argument}[{i}] must be of type {item.__name__}, got {got}.")
    return items
