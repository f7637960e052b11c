"""Elastic slices (``min_slices``): a multislice job that loses whole slices goes on with the
slices it has, from its newest checkpoint, and grows back when capacity for every slice returns.

JobSet cannot change how many slices (replicated Jobs) a running JobSet has, and every process
is told the slice count in its environment, so a change of size is a new JobSet of the same
name at the new size, made once the old one is gone: a try never has two. The backend decides
when (it sees the capacity), stops the job and raises :class:`SlicesChanged`; the operator
submits the next size. This module holds the plain values both read.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.arguments import positive_seconds, whole_number
from airflow_provider_jax.runtime.env import RESIZE_REASON_ENV

DEFAULT_SHRINK_AFTER_S = 600.0  # a lost slice's capacity may take this long to come back


@dataclass(frozen=True)
class ElasticSlices:
    """A job's elastic size, as a backend watches it.

    :param full: the slices the job asks for (``num_slices``).
    :param minimum: the fewest it goes on with (``min_slices``).
    :param shrink_after: seconds a lost slice's capacity may stay away before the job goes on
        without it.
    :param now: the slices of the JobSet that runs now.
    :param checkpoint_dir: the rendered ``<output_dir>/checkpoints``, where it grows from.
    """

    full: int
    minimum: int
    shrink_after: float = DEFAULT_SHRINK_AFTER_S
    now: int = 0
    checkpoint_dir: str | None = None

    def __post_init__(self) -> None:
        if not self.now:
            object.__setattr__(self, "now", self.full)

    @classmethod
    def of(
        cls,
        num_slices: int,
        min_slices: int | None,
        shrink_after: datetime.timedelta | float | None,
        *,
        output_dir: object,
        pathways: object,
        max_restarts: int = 1,
        execution_timeout: datetime.timedelta | None = None,
        multi_pool_slices: bool = False,
    ) -> ElasticSlices | None:
        """The operator's ``min_slices`` and ``shrink_after``, checked with the arguments
        they meet, or a ValueError that names them; None for a job of fixed size.

        :param multi_pool_slices: each slice spans several node pools (a dynamic super-slice
            of several cubes): its capacity, seen per node pool, never shows it whole again.
        """
        if min_slices is None:
            if shrink_after is not None:
                raise ValueError(
                    "shrink_after is how long a lost slice may stay away before the job goes "
                    "on without it: it needs min_slices= too."
                )
            return None
        whole_number("min_slices", min_slices, minimum=1)
        if num_slices < 2:
            raise ValueError(
                f"min_slices needs a multislice job (num_slices >= 2), got num_slices="
                f"{num_slices}: a job of one slice has none to lose and go on without."
            )
        if min_slices >= num_slices:
            raise ValueError(
                f"min_slices must be below num_slices ({num_slices}), got {min_slices}: "
                f"1 to {num_slices - 1} lets the job go on with fewer slices; leave it unset "
                "for a job that waits for every slice."
            )
        if pathways is not None:
            raise ValueError(
                "min_slices does not go with pathways=: Pathways keeps its own elastic "
                "slices (Pathways(elastic_slices=...), docs/pathways.md)."
            )
        if output_dir is None:
            raise ValueError(
                "min_slices needs output_dir: a job that changes size restarts from its newest "
                "checkpoint in <output_dir>/checkpoints, and grows back at its next one."
            )
        if max_restarts < 1:
            raise ValueError(
                f"min_slices needs max_restarts >= 1, got {max_restarts}: losing a slice fails "
                "its pods, which restarts the JobSet; with no restart the first loss fails the "
                "job before it can go on with fewer slices."
            )
        if multi_pool_slices:
            raise ValueError(
                "min_slices does not go with a dynamic super-slice of several 4x4x4 cubes: "
                "capacity is seen per node pool (a cube), so a lost slice's capacity never "
                "shows whole again and the job could shrink but never grow back."
            )
        wait = DEFAULT_SHRINK_AFTER_S
        if shrink_after is not None:
            wait = positive_seconds("shrink_after", shrink_after, timedelta_ok=True)
        if execution_timeout is not None and wait >= execution_timeout.total_seconds():
            raise ValueError(
                f"shrink_after ({wait:.0f} s) must be shorter than execution_timeout "
                f"({execution_timeout}): a lost slice would time the task out before the job "
                "went on without it."
            )
        return cls(full=num_slices, minimum=min_slices, shrink_after=wait)

    def at(self, slices: int, checkpoint_dir: str | None = None) -> ElasticSlices:
        """The same policy for a JobSet of ``slices`` (checkpointing to ``checkpoint_dir``)."""
        where = checkpoint_dir or self.checkpoint_dir
        return ElasticSlices(self.full, self.minimum, self.shrink_after, slices, where)

    def shrinks_to(self, available: int) -> int | None:
        """The size to go on with when only ``available`` slices have capacity, or None when
        the job must wait (too few for ``minimum``, or nothing lost)."""
        if self.minimum <= available < self.now:
            return available
        return None

    def grows(self, available: int) -> bool:
        """Whether capacity for every slice is there while the job runs smaller."""
        return self.now < self.full <= available

    def shrink_line(self, name: str, to: int, step: int | None) -> str:
        """The task log's line for a shrink to ``to`` slices from checkpoint ``step``."""
        where = f"checkpoint step {step}" if step is not None else "the start (no checkpoint)"
        return (
            f"{name}: {self.now - to} of {self.now} slices have had no capacity for "
            f"{self.shrink_after:g} s: shrinking from {self.now} to {to} of {self.full} slices "
            f"(min_slices={self.minimum}), from {where}."
        )

    def back_line(self, name: str, step: int | None) -> str:
        """The task log's line when capacity for every slice is back (newest ``step``)."""
        newest = f"step {step}" if step is not None else "none"
        return (
            f"{name}: capacity for all {self.full} slices is back; growing from {self.now} at "
            f"the next checkpoint (newest now: {newest})."
        )

    def gone_line(self, name: str) -> str:
        """The task log's line when that capacity went again before the next checkpoint."""
        return f"{name}: the capacity for every slice is gone again; staying at {self.now}."

    def grow_line(self, name: str, step: int) -> str:
        """The task log's line for growing back at checkpoint ``step``."""
        return (
            f"{name}: capacity for all {self.full} slices is back and checkpoint step {step} "
            f"is saved: growing from {self.now} to {self.full} slices, from it."
        )

    def as_row(self) -> dict[str, Any]:
        """Plain JSON, for a trigger row (``ElasticSlices(**row)`` reads it back)."""
        return {
            "full": self.full,
            "minimum": self.minimum,
            "shrink_after": self.shrink_after,
            "now": self.now,
            "checkpoint_dir": self.checkpoint_dir,
        }


def resize_env(reason: str | None) -> dict[str, str]:
    """The env of a JobSet made at a new size: why, for ``runtime.start_reason()``."""
    return {RESIZE_REASON_ENV: reason} if reason else {}
