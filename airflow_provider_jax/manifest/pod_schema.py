"""Nested arguments checked against the pod's own types, as the API server would check them.

``pod_template_override``, ``security_context``, ``volumes``, ``volume_mounts`` and
``tolerations`` are Kubernetes objects handed to us whole. Without this check a field given
as a string (``runAsUser: "1000"``, ``privileged: "false"``) or a misspelt one is accepted at
parse and then refused by the API server (422) once the task runs, or dropped without a word:
JobSet's CRD prunes unknown fields. Here each value is held to the pod template's structural
schema (``pod_template_schema.json``, Kubernetes' core/v1 types as JobSet's CRD carries them,
written by ``tools/pod_schema/generate.py``): types, required fields, enums, patterns, integer
formats, and unknown fields, as ``kubectl``'s strict field validation refuses them. The
message names the argument and the path inside it. Pure: the schema is read once, when a
nested argument is first given.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from difflib import get_close_matches
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).with_name("pod_template_schema.json")
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# Where each kind of nested argument sits in the pod template.
POD_TEMPLATE = ()
CONTAINER = ("spec", "containers", "[]")
SECURITY_CONTEXT = (*CONTAINER, "securityContext")
VOLUME = ("spec", "volumes", "[]")
VOLUME_MOUNT = (*CONTAINER, "volumeMounts", "[]")
TOLERATION = ("spec", "tolerations", "[]")


@functools.cache
def _root() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


def _schema(where: tuple[str, ...]) -> dict[str, Any]:
    node = _root()
    for step in where:
        node = node["items"] if step == "[]" else node["properties"][step]
    return node


def check(argument: str, value: Any, where: tuple[str, ...], *, partial: bool = False) -> None:
    """Raise ValueError naming ``argument`` and the path inside it where ``value`` is not
    what Kubernetes accepts at ``where`` in the pod template. ``partial``: ``value`` is merged
    over a whole object (an override), so the fields its mappings require may come from that
    object; a list's items are whole objects and need theirs."""
    _check(argument, value, _schema(where), partial)


def check_each(argument: str, values: Sequence[Any], where: tuple[str, ...]) -> None:
    for i, value in enumerate(values):
        check(f"{argument}[{i}]", value, where)


def check_mounts(argument: str, pod: Mapping[str, Any]) -> None:
    """Every container's volume mounts name a volume of the pod: the API server refuses such
    a pod only when the Job creates it, and the JobSet then waits with no pod at all."""
    spec = pod.get("spec") or {}
    names = {v.get("name") for v in spec.get("volumes") or ()}
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or ():
            for mount in container.get("volumeMounts") or ():
                if mount.get("name") not in names:
                    raise ValueError(
                        f"{argument}: container {container.get('name')!r} mounts the volume "
                        f"{mount.get('name')!r}, which the pod does not declare (its volumes: "
                        f"{sorted(n for n in names if n)}). Add it to volumes=."
                    )


def _check(path: str, value: Any, schema: Mapping[str, Any], partial: bool = False) -> None:
    if value is None:
        return  # Kubernetes reads null as unset
    if schema.get("x-kubernetes-int-or-string"):
        if not _is_int(value) and not isinstance(value, str):
            _wrong(path, "an integer or a string", value)
    else:
        kind = schema.get("type")
        if kind == "object":
            _check_object(path, value, schema, partial)
            return
        if kind == "array":
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                _wrong(path, "a list", value)
            limit = schema.get("maxItems")
            if limit is not None and len(value) > limit:
                raise ValueError(f"{path} holds {len(value)} items; at most {limit}.")
            for i, item in enumerate(value):
                _check(f"{path}[{i}]", item, schema.get("items", {}))
            return
        _check_scalar(path, value, kind, schema)
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{path} must be one of {schema['enum']}, got {value!r}.")
    pattern = schema.get("pattern")
    if pattern and isinstance(value, str) and not re.search(pattern, value):
        if pattern == QUANTITY_PATTERN:
            raise ValueError(
                f"{path} must be a Kubernetes quantity such as '8', '500m' or '32Gi', got "
                f"{value!r}."
            )
        raise ValueError(f"{path} {value!r} does not match Kubernetes' pattern {pattern}.")


def _check_scalar(path: str, value: Any, kind: str | None, schema: Mapping[str, Any]) -> None:
    if kind == "string":
        if not isinstance(value, str):
            _wrong(path, "a string", value)
        if (limit := schema.get("maxLength")) is not None and len(value) > limit:
            raise ValueError(f"{path} is {len(value)} characters long; at most {limit}.")
    elif kind == "boolean":
        if not isinstance(value, bool):
            _wrong(path, "True or False", value)
    elif kind == "integer":
        if not _is_int(value):
            _wrong(path, "an integer", value)
        low, high = INT_RANGES.get(schema.get("format", ""), (None, None))
        low = schema.get("minimum", low)
        high = schema.get("maximum", high)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{path} must be an integer from {low} to {high}, got {value}.")
    elif kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        _wrong(path, "a number", value)


def _check_object(path: str, value: Any, schema: Mapping[str, Any], partial: bool) -> None:
    if not isinstance(value, Mapping):
        _wrong(path, "a mapping", value)
    for key in value:
        if not isinstance(key, str):
            raise ValueError(f"{path} has the key {key!r}; keys are strings.")
    properties = schema.get("properties")
    if properties is not None:
        missing = [name for name in schema.get("required", ()) if name not in value]
        if missing and not partial:
            raise ValueError(f"{path} needs {', '.join(map(repr, missing))}.")
        for key, item in value.items():
            if key in properties:
                _check(_join(path, key), item, properties[key], partial)
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                near = get_close_matches(key, properties, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else f"; known: {sorted(properties)}"
                raise ValueError(f"{path} has no field {key!r} in Kubernetes{hint}")
    elif isinstance(extra := schema.get("additionalProperties"), Mapping):
        for key, item in value.items():
            _check(_join(path, key), item, extra)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_][\w-]*", key) else f"{path}[{key!r}]"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wrong(path: str, wanted: str, value: Any) -> None:
    raise ValueError(f"{path} must be {wanted}, got {type(value).__name__} {value!r}.")
