"""Checks on operator arguments shared by every operator, sensor and trigger: one check and one
message per kind of value. Pure: no Airflow, no I/O."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

# A container image reference as container runtimes parse it (distribution's grammar):
# [registry[:port]/]repo[:tag][@digest].
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_DOMAIN = (
    r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
)
IMAGE_REFERENCE = re.compile(
    rf"^(?:{_IMAGE_DOMAIN}(?::[0-9]+)?/)?{_IMAGE_COMPONENT}(?:/{_IMAGE_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)


def image_reference(argument: str, value: object) -> None:
    """An image reference as container runtimes parse it, or a ValueError naming
    ``argument``: Kubernetes would otherwise stop the pod at InvalidImageName."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{argument} must be a non-empty string, e.g. 'us-docker.pkg.dev/p/r/jax:tag'."
        )
    if not IMAGE_REFERENCE.fullmatch(value):
        raise ValueError(
            f"{argument} {value!r} is not a valid image reference (Kubernetes would stop at "
            "InvalidImageName): use [registry/]repository[:tag][@sha256:digest], with a "
            "lowercase repository, e.g. 'us-docker.pkg.dev/p/r/jax:tag'."
        )


# The longest duration anything takes: 100 years. Airflow adds a duration to a date (a retry's
# delay to now, a timeout to a try's start), and past about 8,000 years from now the sum is no
# datetime (OverflowError in Airflow's own scheduling, after the task has run).
MAX_DURATION = datetime.timedelta(days=36525)


def positive_seconds(
    name: str, value: object, *, timedelta_ok: bool = False, zero_ok: bool = False
) -> float:
    """``value`` as seconds (a number, or a ``timedelta`` where ``timedelta_ok``), or a
    ValueError naming ``name``: every duration of every operator, sensor and trigger goes
    through here. It must be finite and positive (``nan`` compares false with everything, so a
    wait of ``nan`` would fire at once, and one of ``inf`` never), at most
    :data:`MAX_DURATION`, and a bool is not a number of seconds."""
    seconds = (
        value.total_seconds() if timedelta_ok and isinstance(value, datetime.timedelta) else value
    )
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds < 0
        or (seconds == 0 and not zero_ok)
        or seconds > MAX_DURATION.total_seconds()
    ):
        expected = "a timedelta or seconds" if timedelta_ok else "seconds"
        raise ValueError(
            f"{name} must be {expected} {'>=' if zero_ok else '>'} 0 and at most "
            f"{MAX_DURATION.days} days "
            f"({MAX_DURATION.total_seconds():.0f} s, a range every date sum holds), got {value!r}."
        )
    return float(seconds)


def whole_number(name: str, value: object, *, minimum: int = 0) -> int:
    """``value`` if it is an int of at least ``minimum``: a bool, a float (even ``2.0``) or a
    string is refused by name, since each would mean something else once rendered."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return value


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest of ``choices``, else empty: a slip of case
    or spelling is named with its fix."""
    import difflib  # only when a value is wrong: not on every DAG file's parse

    pool = list(choices)
    lowered = {c.lower(): c for c in pool}
    near = lowered.get(value.strip().lower()) or next(
        iter(difflib.get_close_matches(value, pool, n=1, cutoff=0.75)), None
    )
    return f" (did you mean {near!r}?)" if near else ""


def is_template(value: object) -> bool:
    """Whether a field still holds a Jinja template: such values are checked once rendered."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def holds_template(value: object) -> bool:
    """Whether ``value``, or any string inside its mappings and lists, is Jinja."""
    if isinstance(value, dict):
        return any(holds_template(k) or holds_template(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(holds_template(v) for v in value)
    return is_template(value)


def not_templated(name: str, value: object, templated: Iterable[str] = ()) -> None:
    """A ValueError for Jinja in ``name``, a field Airflow does not render: it would be used
    exactly as written, braces and all."""
    if holds_template(value):
        fields = f" (the templated ones: {', '.join(templated)})" if templated else ""
        raise ValueError(
            f"{name} is not a templated field, so {value!r} would be used as written, never "
            f"rendered. Give a literal value, or template a field that is templated{fields}."
        )


def refuse_untemplated(arguments: Mapping[str, object], templated: Sequence[str]) -> None:
    """:func:`not_templated` for each of an ``__init__``'s ``arguments`` (its ``locals()``)
    that is not a templated field."""
    for name, value in arguments.items():
        if name not in templated and name not in ("self", "kwargs", "__class__"):
            not_templated(name, value, templated)


def one_of(name: str, value: object, choices: tuple[object, ...]) -> None:
    """A ValueError naming ``name`` unless ``value`` is one of ``choices`` (compared exactly:
    ``'Always'`` is not ``'always'``, nor ``True`` the same as ``1``)."""
    if not any(value == c and type(value) is type(c) for c in choices):
        hint = (
            did_you_mean(value, [c for c in choices if isinstance(c, str)])
            if isinstance(value, str)
            else ""
        )
        raise ValueError(f"{name} must be one of {choices}, got {value!r}{hint}.")


@overload
def as_bool(argument: str, value: object, *, optional: Literal[False] = False) -> bool: ...
@overload
def as_bool(argument: str, value: object, *, optional: Literal[True]) -> bool | None: ...
def as_bool(argument: str, value: object, *, optional: bool = False) -> bool | None:
    """``value`` if it is True or False (or None where ``optional``): a string such as
    ``"false"`` is truthy in Python, so it would silently mean the opposite."""
    if (value is None and optional) or isinstance(value, bool):
        return value
    wanted = "True, False or None" if optional else "True or False"
    raise TypeError(f"{argument} must be {wanted}, got {type(value).__name__} {value!r}.")


@dataclass(frozen=True)
class Kind:
    """A kind of argument value: what the docs call it, and the one check every argument of
    the kind goes through. ``check(name, value)`` returns the value as the operator keeps it,
    or raises a ValueError or TypeError that names the argument; ``None`` passes where the
    kind is ``optional``."""

    name: str
    check: Callable[[str, Any], Any] = field(repr=False)
    optional: bool = False

    def __call__(self, argument: str, value: object) -> Any:
        if value is None and self.optional:
            return None
        return self.check(argument, value)

    def or_none(self) -> Kind:
        """The same kind, where ``None`` means "not given"."""
        return Kind(self.name, self.check, optional=True)


def enum(*choices: object) -> Kind:
    """One of ``choices``, exactly."""

    def check(argument: str, value: object) -> object:
        one_of(argument, value, choices)
        return value

    return Kind(" | ".join(f"`{c}`" for c in choices), check)


DURATION = Kind(
    "duration (seconds > 0, finite, or a timedelta)",
    lambda argument, value: positive_seconds(argument, value, timedelta_ok=True),
)
SECONDS = Kind("seconds (> 0, finite)", positive_seconds)
FLAG = Kind("True | False", as_bool)
