"""Whether a field still holds a Jinja template: such values are checked once rendered."""

from __future__ import annotations


def is_template(value: object) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)
