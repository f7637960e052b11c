"""Which slice shapes GKE offers per TPU generation, generated from its rules, not listed.

v5e and v6e slices are 2-D and come in a fixed set of shapes. v4, v5p and Ironwood slices are
3-D: a few small shapes below one 4x4x4 cube, then any AxBxC whose sides are multiples of 4
(up to 256) and whose cube count stays within the generation's largest slice; v5p and
Ironwood also want A <= B <= C. A chip-count name (``v5p-1024``) means the first such shape
in (A, B, C) order unless GKE's launcher names another one the default (``COUNT_DEFAULTS``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

SMALL_3D = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
SIDE_STEP, MAX_SIDE = 4, 256
CUBE_CHIPS = SIDE_STEP**3


def sides(topology: str) -> tuple[int, ...]:
    return tuple(int(d) for d in topology.split("x"))


def chips(topology: str) -> int:
    return math.prod(sides(topology))


def _defaults(text: str) -> Mapping[int, str]:
    pairs = (item.split(":") for item in text.split())
    return MappingProxyType({int(n): shape for n, shape in pairs})


# Chips -> the shape a chip-count name means where that is not the first shape in order
# (xpk's default_topologies, recorded as facts).
_LARGE = (
    "256:4x8x8 384:4x8x12 512:8x8x8 576:4x12x12 640:4x8x20 768:8x8x12 896:4x8x28 960:4x12x20 "
    "1024:8x8x16 1152:8x12x12 1280:8x8x20 1344:4x12x28 1408:4x8x44 1536:8x12x16 1600:4x20x20 "
    "1664:4x8x52 1728:12x12x12 1792:8x8x28 1920:8x12x20 2048:8x16x16 2112:4x12x44 2176:4x8x68 "
    "2240:4x20x28 2304:12x12x16 2432:4x8x76 2496:4x12x52 2560:8x16x20 2688:8x12x28 "
    "2816:8x8x44 2880:12x12x20 2944:4x8x92 3072:12x16x16 3136:4x28x28 3200:8x20x20 "
    "3264:4x12x68 3328:8x8x52 3456:12x12x24 3520:4x20x44 3584:8x16x28 3648:4x12x76 "
    "3712:4x8x116 3840:12x16x20 3968:4x8x124 4032:12x12x28 4096:16x16x16 4224:8x12x44 "
    "4352:8x8x68 4480:8x20x28 4608:12x16x24 4800:12x20x20 4864:8x8x76 4992:8x12x52 "
    "5120:16x16x20 5184:12x12x36 5376:12x16x28 5632:8x16x44 5760:12x20x24 5888:8x8x92 "
    "6144:16x16x24 6912:12x24x24 8960:16x20x28"
)
COUNT_DEFAULTS = {
    "v4": _defaults("256:4x8x8 512:8x8x8 768:8x8x12 1024:8x8x16 2048:8x16x16"),
    "v5p": _defaults(_LARGE),
    "tpu7x": _defaults(_LARGE + " 8192:16x16x32 9216:16x24x24"),
    "tpu7": _defaults("256:4x8x8"),
}


@dataclass(frozen=True)
class ShapeRule:
    """The shapes of one generation: ``fixed`` ones, plus (``max_cubes`` > 0) the 3-D ones
    made of whole 4x4x4 cubes."""

    fixed: tuple[str, ...]
    max_cubes: int = 0
    ordered: bool = True
    count_defaults: Mapping[int, str] = field(default_factory=dict)

    @property
    def dims(self) -> int:
        return len(sides(self.fixed[-1]))

    def valid(self, topology: str) -> bool:
        if topology in self.fixed:
            return True
        d = sides(topology)
        return (
            self.max_cubes > 0
            and len(d) == 3
            and all(s % SIDE_STEP == 0 and SIDE_STEP <= s <= MAX_SIDE for s in d)
            and math.prod(s // SIDE_STEP for s in d) <= self.max_cubes
            and (not self.ordered or d == tuple(sorted(d)))
        )

    def why_invalid(self, topology: str) -> str:
        d = sides(topology)
        if len(d) != self.dims:
            return f"this generation's slices are {self.dims}-D"
        if not self.max_cubes:
            return f"GKE offers only {', '.join(self.fixed)}"
        if self.ordered and d != tuple(sorted(d)):
            return "GKE wants the sides in non-decreasing order (AxBxC with A <= B <= C)"
        if math.prod(s // SIDE_STEP for s in d) > self.max_cubes and all(s % 4 == 0 for s in d):
            return (
                f"the largest slice is {self.max_cubes} 4x4x4 cubes "
                f"({self.max_cubes * CUBE_CHIPS} chips)"
            )
        return (
            f"below one 4x4x4 cube GKE offers only {', '.join(SMALL_3D)}; above it, every side "
            "is a multiple of 4 (at most 256)"
        )

    def for_chips(self, count: int) -> str | None:
        """The shape a chip-count name means, or None when no shape has that many chips."""
        if count in self.count_defaults:
            return self.count_defaults[count]
        return next((t for t in self.shapes() if chips(t) == count), None)

    def shapes(self) -> Iterator[str]:
        """Every valid shape, fixed ones first, then in (A, B, C) order."""
        yield from self.fixed
        if not self.max_cubes:
            return
        most = MAX_SIDE // SIDE_STEP
        for a in range(1, most + 1):
            for b in range(a if self.ordered else 1, most + 1):
                for c in range(b if self.ordered else 1, most + 1):
                    if a * b * c > self.max_cubes:
                        break
                    yield "x".join(str(SIDE_STEP * n) for n in (a, b, c))

    def nearest(self, count: int, n: int = 3) -> list[str]:
        """The ``n`` shapes whose chip counts come closest to ``count``."""
        return sorted(self.shapes(), key=lambda t: (abs(chips(t) - count), chips(t)))[:n]
