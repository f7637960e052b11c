"""An ordered list of capacity choices (``capacity=["reservation:r", "flex-start", "spot"]``),
who walks it, and which capacity a job was admitted on. Pure: no I/O.

Three ways to fall back, each where it belongs (``docs/capacity.md``):

- **Kueue** (``queue_name`` and no ``capacity_wait``): the ClusterQueue's ResourceFlavors, in
  their order, with ``flavorFungibility``. The pods carry no capacity selector of their own;
  Kueue adds the admitting flavor's node labels when it admits the JobSet, and the task log
  says which flavor that was and what capacity it means.
- **The provider** (``capacity_wait``, default :data:`DEFAULT_CAPACITY_WAIT_S` without a queue):
  each choice is submitted in turn; one that gets no capacity within ``capacity_wait`` (pods
  unschedulable, or a ProvisioningRequest that failed) is deleted, and the next submitted
  under the same JobSet name, so one try never has two JobSets.
- **A GKE custom ComputeClass** (``compute_class``): the class holds the priorities; the pods
  only select it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.arguments import positive_seconds
from airflow_provider_jax.manifest.capacity import (
    FLEX_START,
    ON_DEMAND,
    QUEUED_LABEL,
    RESERVATION,
    RESERVATION_NAME_LABEL,
    SPOT,
    SPOT_LABEL,
    Capacity,
)

COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"  # GKE's selector of a ComputeClass
SELECTOR_KEYS = (SPOT_LABEL, RESERVATION_NAME_LABEL, QUEUED_LABEL, COMPUTE_CLASS_LABEL)
DEFAULT_CAPACITY_WAIT_S = 600.0  # per choice, when the provider walks the list
_CLASS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a name and a label value


@dataclass(frozen=True)
class CapacityChoices:
    """A parsed ``capacity=`` with ``capacity_wait`` and ``compute_class``.

    :param choices: the capacities in order of preference (one for a plain ``capacity``).
    :param wait_s: how long each choice but the last may take to get capacity before the
        provider tries the next; None when there is no next, or Kueue's flavors decide.
    :param compute_class: a GKE custom ComputeClass whose priorities decide instead.
    """

    choices: tuple[Capacity, ...] = (Capacity(),)
    wait_s: float | None = None
    compute_class: str | None = None
    _waits_given: bool = field(default=False, compare=False, repr=False)

    @classmethod
    def parse(
        cls,
        capacity: object,
        *,
        reservation_project: str | None = None,
        capacity_wait: datetime.timedelta | float | None = None,
        compute_class: str | None = None,
        queue_name: str | None = None,
    ) -> CapacityChoices:
        """The choices, or a ValueError naming the argument and what would be valid."""
        if isinstance(capacity, str):
            choices: tuple[Capacity, ...] = (Capacity.parse(capacity, reservation_project),)
        elif isinstance(capacity, Sequence) and not isinstance(capacity, bytes):
            choices = _parse_list(list(capacity), reservation_project)
        else:
            return cls((Capacity.parse(capacity),))  # raises, naming capacity
        wait: float | None = None
        if capacity_wait is not None:
            wait = positive_seconds("capacity_wait", capacity_wait, timedelta_ok=True)
            if len(choices) == 1:
                raise ValueError(
                    "capacity_wait is how long each choice of a capacity list may wait before "
                    "the next is tried; with one capacity there is no next. Give capacity= a "
                    "list, or drop capacity_wait (queue_timeout bounds the wait)."
                )
        elif len(choices) > 1 and not queue_name:
            wait = DEFAULT_CAPACITY_WAIT_S
        if compute_class is not None:
            _check_compute_class(compute_class, choices)
        return cls(choices, wait, compute_class, capacity_wait is not None)

    @property
    def by_kueue(self) -> bool:
        """Whether Kueue's flavors walk the list (a queue, and no ``capacity_wait``)."""
        return len(self.choices) > 1 and self.wait_s is None

    @property
    def by_provider(self) -> bool:
        return len(self.choices) > 1 and self.wait_s is not None

    def rendered(self, index: int) -> Capacity:
        """The capacity whose selectors choice ``index``'s pods carry: none when Kueue's
        flavors or a ComputeClass choose."""
        if self.by_kueue or self.compute_class is not None:
            return Capacity()
        return self.choices[index]

    def wait_for(self, index: int) -> float | None:
        """``capacity_wait`` for choice ``index``: None for the last, which waits as a plain
        capacity does (``queue_timeout``, ``execution_timeout``)."""
        return self.wait_s if self.by_provider and index < len(self.choices) - 1 else None

    @property
    def asks_flex_start(self) -> bool:
        return any(c.kind == FLEX_START for c in self.choices)

    def describe(self) -> str:
        return " → ".join(str(c) for c in self.choices)

    def check_waits(self, queue_timeout_s: float | None, execution_timeout_s: float | None) -> None:
        """Refuse waits under which the list could never fall back: ``queue_timeout`` bounds
        each choice's JobSet (from its creation), so a choice's ``capacity_wait`` must end
        before it; and the choices before the last must leave ``execution_timeout`` time."""
        if not self.by_provider or self.wait_s is None:
            return
        wait, nxt = self.wait_s, self.choices[1]
        if queue_timeout_s is not None and wait >= queue_timeout_s:
            raise ValueError(
                f"capacity_wait ({wait:g} s{'' if self._waits_given else ', the default'}) is "
                f"not shorter than queue_timeout ({queue_timeout_s:g} s): queue_timeout would "
                f"fail the task while {self.choices[0]} still waits, so {nxt} would never be "
                f"tried. Give capacity_wait < {queue_timeout_s:g} s, or queue_timeout > "
                f"{wait:g} s (it bounds each choice's wait)."
            )
        before_last = wait * (len(self.choices) - 1)
        if execution_timeout_s is not None and before_last >= execution_timeout_s:
            raise ValueError(
                f"capacity_wait ({wait:g} s) for each of the {len(self.choices) - 1} choice(s) "
                f"before {self.choices[-1]} adds up to {before_last:g} s, not less than "
                f"execution_timeout ({execution_timeout_s:g} s): the task would time out before "
                "the last choice is tried. Give a shorter capacity_wait, or a longer "
                "execution_timeout."
            )


def _parse_list(values: list[Any], reservation_project: str | None) -> tuple[Capacity, ...]:
    if not values:
        raise ValueError("capacity is an empty list: give one capacity or several, in order.")
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"capacity: every choice of the list must be a string, got {values!r}.")
    kinds = [v.partition(":")[0] for v in values]
    if reservation_project is not None and kinds.count(RESERVATION) != 1:
        raise ValueError(
            "reservation_project names the project of one reservation: the capacity list must "
            f"hold exactly one reservation:<name>, it holds {kinds.count(RESERVATION)}."
        )
    choices = tuple(
        Capacity.parse(v, reservation_project if k == RESERVATION else None)
        for v, k in zip(values, kinds, strict=True)
    )
    seen: set[str] = set()
    for choice in choices:
        if str(choice) in seen:
            raise ValueError(
                f"capacity lists {str(choice)!r} twice in {values!r}: each choice is tried "
                "once, in order. Remove the repeat."
            )
        seen.add(str(choice))
    return choices


def _check_compute_class(name: object, choices: tuple[Capacity, ...]) -> None:
    if not isinstance(name, str) or not _CLASS_NAME.fullmatch(name):
        raise ValueError(
            f"compute_class {name!r} is no ComputeClass name: 1-63 lowercase letters, digits "
            "and '-', starting and ending with a letter or digit."
        )
    if choices != (Capacity(),):
        raise ValueError(
            f"compute_class {name!r} and capacity={' → '.join(map(str, choices))!r} both choose "
            "the capacity: a custom ComputeClass's priorities decide (Spot, reservations, "
            "on-demand). Give one of the two."
        )


def capacity_of_selector(selector: Mapping[str, str]) -> str:
    """The capacity that a pod's node selector (Kueue's flavor labels among it) means."""
    if selector.get(SPOT_LABEL) == "true":
        return SPOT
    if reservation := selector.get(RESERVATION_NAME_LABEL):
        return f"{RESERVATION}:{reservation}"
    if QUEUED_LABEL in selector:
        return FLEX_START
    if compute_class := selector.get(COMPUTE_CLASS_LABEL):
        return f"ComputeClass {compute_class}"
    return ON_DEMAND
