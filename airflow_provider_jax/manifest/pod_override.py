"""Deep-merge a user's pod template override into the generated one. Pure: no I/O."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def merge_override(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``override`` into ``base``. Lists of named objects (containers, volumes,
    env) merge by ``name``; other lists and scalars are replaced."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            merged[key] = merge_override(current, value)
        elif _named_list(current) and _named_list(value):
            by_name = {item["name"]: item for item in current}
            for item in value:
                old = by_name.get(item["name"])
                by_name[item["name"]] = merge_override(old, item) if old else copy.deepcopy(item)
            merged[key] = list(by_name.values())
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _named_list(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(i, Mapping) and "name" in i for i in value)
    )
