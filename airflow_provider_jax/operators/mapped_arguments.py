"""A mapped JAX task's arguments, checked when the DAG is parsed as far as they are known
there: each value given to ``partial()`` and each item of a literal ``expand()`` list through
its argument's kind, and, when every mapped value is literal, each combination the task will
run through the operator's own construction (its kinds, the rules between arguments, the
JobSet of the literal values), as a worker unmapping it would. What a worker would refuse is so
refused at parse, with the argument named. Values mapped from an upstream task (an XComArg)
are known only when the task runs, and are checked then.

Airflow's own ``partial()`` and ``OperatorPartial`` do the mapping; the operator's
``partial`` runs these checks around them (``JaxJobOperator.partial``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk.definitions._internal.mixins import ResolveMixin
from airflow.sdk.definitions.mappedoperator import OperatorPartial

from airflow_provider_jax.operators.job_arguments import BY_NAME, check_one
from airflow_provider_jax.operators.job_plan import refuse_other_platforms

if TYPE_CHECKING:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

# Each combination costs one construction (a few ms): past this many, the rest are checked
# item by item at parse and whole when they run. The first ones hold every item once.
MAX_COMBINATIONS = 32


def check_given(operator: Any, values: Mapping[str, Any]) -> None:
    """Each of a JAX operator class's arguments among ``values`` through its kind, alone (a
    value from an upstream task is known only when the task runs). ``operator`` is one of
    ``JaxJobOperator``'s classes (not imported here: the operator imports this module)."""
    refuse_other_platforms(operator.platform, values)
    templated = operator.templated_arguments()
    for name, value in values.items():
        if name in BY_NAME and not _from_upstream(value):
            check_one(name, value, rendered=False, templated=templated)


def _from_upstream(value: object) -> bool:
    """Whether ``value`` holds (at any depth) a value an upstream task gives at run time."""
    if isinstance(value, ResolveMixin):
        return True
    if isinstance(value, Mapping):
        return any(_from_upstream(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_from_upstream(v) for v in value)
    return False


def _literal_list(value: object) -> bool:
    return isinstance(value, list | tuple) and not _from_upstream(value)


class CheckedPartial(OperatorPartial):
    """Airflow's ``OperatorPartial``, whose ``expand`` and ``expand_kwargs`` check what
    they are given first, then map as Airflow does."""

    __slots__ = ()

    @classmethod
    def of(cls, made: OperatorPartial) -> CheckedPartial:
        """``made`` (Airflow's ``partial()``), as one that checks its expansion."""
        checked = cls(operator_class=made.operator_class, kwargs=made.kwargs, params=made.params)
        made._expand_called = True  # replaced by ``checked``: no task was left unmapped
        return checked

    def expand(self, **mapped_kwargs: Any) -> MappedOperator:
        for name, values in mapped_kwargs.items():
            if _literal_list(values):
                for value in values:
                    check_given(self.operator_class, {name: value})
        mapped = super().expand(**mapped_kwargs)
        if all(_literal_list(values) for values in mapped_kwargs.values()):
            names, lists = list(mapped_kwargs), [list(v) for v in mapped_kwargs.values()]
            _construct_each(mapped, (dict(zip(names, c, strict=True)) for c in _product(lists)))
        return mapped

    def expand_kwargs(self, kwargs: Any, *, strict: bool = True) -> MappedOperator:
        literal = isinstance(kwargs, Sequence) and not _from_upstream(kwargs)
        if literal:
            for combination in kwargs:
                if isinstance(combination, Mapping):
                    check_given(self.operator_class, combination)
        mapped = super().expand_kwargs(kwargs, strict=strict)
        if literal and all(isinstance(c, Mapping) for c in kwargs):
            _construct_each(mapped, iter(kwargs))
        return mapped


def _product(lists: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    """Every combination of ``lists`` (as a mapped task's instances take them), those that
    hold each item once first."""
    if not all(lists):
        return
    seen = set()
    for i in range(max(len(items) for items in lists)):
        seen.add(indices := tuple(i % len(items) for items in lists))
        yield tuple(items[j] for items, j in zip(lists, indices, strict=True))
    for indices in itertools.product(*(range(len(items)) for items in lists)):
        if indices not in seen:
            yield tuple(items[j] for items, j in zip(lists, indices, strict=True))


def _construct_each(mapped: MappedOperator, combinations: Iterator[Mapping[str, Any]]) -> None:
    """Each of the first :data:`MAX_COMBINATIONS` combinations made into its task, as a
    worker makes it when the task runs (``unmap``: nothing is added to the DAG), so the
    rules between its arguments and its JobSet are checked now."""
    for combination in itertools.islice(combinations, MAX_COMBINATIONS):
        try:
            mapped.unmap(combination)
        except (ValueError, TypeError) as err:
            given = ", ".join(f"{name}={value!r}" for name, value in combination.items())
            kind = TypeError if isinstance(err, TypeError) else ValueError
            raise kind(f"{mapped.task_id}, mapped with {given}: {err}") from err
