"""Refuse to write a secret Airflow knows into a JobSet.

Anyone who can read JobSets or pods reads their env and the shipped call in plain text, and
the rendered-fields view shows them too. Airflow's secrets masker knows each value that came
from a Connection or a sensitive Variable; such a value must travel by reference
(``secrets=``) instead."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

HOW = "pass it by reference with secrets=[SecretRef('env', '<VAR>', '<secret>', '<key>')]"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _masked(value: Any) -> bool:
    from airflow.sdk._shared.secrets_masker import redact

    return any(redact(text) != text for text in _strings(value))


def refuse_masked_values(env: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first env var or argument that holds a masked value."""
    for what, values in (("env", env), ("argument", arguments)):
        for name, value in values.items():
            if _masked(value):
                raise ValueError(
                    f"{what} {name!r} holds a value Airflow masks as a secret (from a "
                    "Connection or a sensitive Variable); it would be written in plain text "
                    f"into the JobSet, where anyone who can read pods sees it: {HOW}."
                )
