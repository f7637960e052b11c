"""TPU slices: ``tpu-v6e-16``, ``v5p-4x4x12`` or ``tpu7x-128`` to hosts, chips and node labels.

Every device type Google's launcher (xpk) accepts parses here, in its spelling and ours
(``tpu-`` prefixed), to the same hosts, chips per host, GKE labels and machine type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from airflow_provider_jax.manifest.accelerators.gpu import is_gpu_name
from airflow_provider_jax.manifest.accelerators.model import (
    INSTANCE_TYPE_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_RESOURCE,
    TPU_TOPOLOGY_LABEL,
    Accelerator,
    check_type,
    unknown,
)
from airflow_provider_jax.manifest.accelerators.tpu_shapes import (
    COUNT_DEFAULTS,
    SMALL_3D,
    ShapeRule,
    chips,
    sides,
)

_2D = ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")


@dataclass(frozen=True)
class TpuGeneration:
    """``prefix`` is how names start (``tpu-v5p``, ``tpu7x``); v4, v5p and Ironwood names
    count TensorCores (two per chip), v5e and v6e names count chips."""

    prefix: str
    gke_accelerator: str
    cores_per_chip: int
    machine_types: Mapping[int, str]  # chips per VM -> machine type
    shapes: ShapeRule

    def count_name(self, topology: str) -> str:
        return f"{self.prefix}-{chips(topology) * self.cores_per_chip}"

    def layouts(self, topology: str) -> list[int]:
        """Chips per VM that GKE offers for ``topology``, the default (xpk's) first."""
        n = chips(topology)
        if n < 4:
            return [n]
        if topology == "2x4" and 8 in self.machine_types:
            return [4, 8]  # two 4-chip VMs as xpk makes the pool; one 8-chip VM on request
        return [4]


GENERATIONS: dict[str, TpuGeneration] = {
    "v4": TpuGeneration(
        "tpu-v4",
        "tpu-v4-podslice",
        2,
        MappingProxyType({4: "ct4p-hightpu-4t"}),
        ShapeRule(SMALL_3D, max_cubes=64, ordered=False, count_defaults=COUNT_DEFAULTS["v4"]),
    ),
    "v5p": TpuGeneration(
        "tpu-v5p",
        "tpu-v5p-slice",
        2,
        MappingProxyType({4: "ct5p-hightpu-4t"}),
        ShapeRule(SMALL_3D, max_cubes=140, count_defaults=COUNT_DEFAULTS["v5p"]),
    ),
    "v5litepod": TpuGeneration(
        "tpu-v5litepod",
        "tpu-v5-lite-podslice",
        1,
        MappingProxyType({1: "ct5lp-hightpu-1t", 4: "ct5lp-hightpu-4t", 8: "ct5lp-hightpu-8t"}),
        ShapeRule(_2D),
    ),
    "v6e": TpuGeneration(
        "tpu-v6e",
        "tpu-v6e-slice",
        1,
        MappingProxyType({1: "ct6e-standard-1t", 4: "ct6e-standard-4t", 8: "ct6e-standard-8t"}),
        ShapeRule(_2D),
    ),
    "tpu7": TpuGeneration(
        "tpu7",
        "tpu7",
        2,
        MappingProxyType({1: "tpu7-standard-1t", 4: "tpu7-standard-4t"}),
        ShapeRule(("1x1x1", *SMALL_3D), max_cubes=4, count_defaults=COUNT_DEFAULTS["tpu7"]),
    ),
    "tpu7x": TpuGeneration(
        "tpu7x",
        "tpu7x",
        2,
        MappingProxyType({1: "tpu7x-standard-1t", 4: "tpu7x-standard-4t"}),
        ShapeRule(("1x1x1", *SMALL_3D), max_cubes=144, count_defaults=COUNT_DEFAULTS["tpu7x"]),
    ),
}
DYNAMIC_SLICING_GENERATION = "tpu7x"  # the one GKE's slice controller carves
ALIASES = {"v5e": "v5litepod", "v5lite": "v5litepod", "v7x": "tpu7x", "v7": "tpu7"}
_NAME = re.compile(r"^(?:tpu-)?(?P<gen>[0-9a-z]+?)-(?P<size>\d+(?:x\d+)*)$")


def tpu_names() -> list[str]:
    """The names suggestions are drawn from: every generation's fixed shapes, in both
    spellings (the generated 3-D shapes run to thousands)."""
    names = []
    for gen in GENERATIONS.values():
        for topology in gen.shapes.fixed:
            names += [gen.count_name(topology), f"{gen.prefix}-{topology}"]
    return names


def generation_of(value: str) -> tuple[str, str] | None:
    """(generation key, size) of a TPU name, or None when it is not one."""
    match = _NAME.fullmatch(value)
    if not match:
        return None
    key = ALIASES.get(match["gen"], match["gen"])
    return (key, match["size"]) if key in GENERATIONS else None


def parse_tpu(
    accelerator: str, *, chips_per_host: int | None = None, dynamic_slicing: bool = False
) -> Accelerator:
    """Parse a TPU slice name such as ``tpu-v6e-16``, ``v5litepod-4x4``, ``v5p-4x4x12`` or
    ``tpu7x-128``.

    :param accelerator: the slice, by chip or TensorCore count or by topology.
    :param chips_per_host: ``8`` asks for one 8-chip VM for a 2x4 v5e/v6e slice instead of
        the default two 4-chip VMs (xpk's layout, and most existing node pools').
    :param dynamic_slicing: GKE's dynamic slicing carves the slice out of a tpu7x cube pool
        at admission: the pods select the accelerator only, not a topology.
    """
    value = check_type(accelerator)
    found = generation_of(value)
    if found is None:
        if is_gpu_name(value):
            raise ValueError(
                f"{accelerator!r} is a GPU; use JaxGpuJobOperator (or @task.jax_gpu) for GPUs."
            )
        raise unknown(accelerator, tpu_names(), "TPU accelerator", "tpu-" + value)
    key, size = found
    gen = GENERATIONS[key]
    if "x" in size:
        topology = size
        if not gen.shapes.valid(topology):
            wanted = chips(topology)
            raise ValueError(
                f"{accelerator!r} is not a {key} slice GKE offers: "
                f"{gen.shapes.why_invalid(topology)}. Closest valid shapes: "
                f"{', '.join(repr(f'{gen.prefix}-{t}') for t in gen.shapes.nearest(wanted))}."
            )
    else:
        count, rest = divmod(int(size), gen.cores_per_chip)
        found_topology = None if rest else gen.shapes.for_chips(count)
        if found_topology is None:
            near = dict.fromkeys(gen.count_name(t) for t in gen.shapes.nearest(count, n=9))
            unit = "TensorCores" if gen.cores_per_chip > 1 else "chips"
            raise ValueError(
                f"Unknown TPU accelerator {accelerator!r}: no {key} slice has {size} {unit}. "
                f"Closest: {', '.join(repr(name) for name in list(near)[:3])}."
            )
        topology = found_topology
    if dynamic_slicing:
        _check_dynamic(key, gen, topology, accelerator)
    return _slice(key, gen, topology, accelerator, chips_per_host, dynamic_slicing)


def _check_dynamic(key: str, gen: TpuGeneration, topology: str, asked: str) -> None:
    """GKE's slice controller carves Ironwood only, and only the shapes below a cube that fill
    a partition (``SMALL_3D``) or whole cubes (what ``ShapeRule`` already holds tpu7x to)."""
    if key != DYNAMIC_SLICING_GENERATION:
        raise ValueError(
            f"dynamic_slicing is GKE's for Ironwood (tpu7x) only; {asked!r} is a {key} slice. "
            f"Use a tpu7x shape such as {', '.join(repr('tpu7x-' + t) for t in SMALL_3D)}, "
            "'tpu7x-4x4x4' or 'tpu7x-4x4x8', or leave dynamic_slicing off."
        )
    if topology not in SMALL_3D and any(side % 4 for side in sides(topology)):
        raise ValueError(
            f"dynamic_slicing cannot carve {asked!r} ({topology}): it carves the sub-slices "
            f"{', '.join(SMALL_3D)} of a 4x4x4 cube, or super-slices of whole cubes "
            f"(4i x 4j x 4k, i <= j <= k, at most {gen.shapes.max_cubes} cubes)."
        )


def _slice(
    key: str,
    gen: TpuGeneration,
    topology: str,
    asked: str,
    chips_per_host: int | None,
    dynamic_slicing: bool = False,
) -> Accelerator:
    layouts = gen.layouts(topology)
    per_host = layouts[0] if chips_per_host is None else chips_per_host
    if per_host not in layouts:
        raise ValueError(
            f"{asked!r} cannot be laid out as {per_host!r} chips per host; "
            f"valid chips_per_host for it: {layouts}."
        )
    selector = {TPU_ACCELERATOR_LABEL: gen.gke_accelerator, TPU_TOPOLOGY_LABEL: topology}
    if dynamic_slicing:  # the cube pool's nodes carry their cube's topology, not the slice's
        del selector[TPU_TOPOLOGY_LABEL]
    if len(layouts) > 1:
        # Both VM sizes carry the same topology label: only the machine type tells the pools
        # apart, so a pod never waits on (or lands in) a pool of the other layout.
        selector[INSTANCE_TYPE_LABEL] = gen.machine_types[per_host]
    return Accelerator(
        name=gen.count_name(topology),
        kind="tpu",
        generation=key,
        chips=chips(topology),
        topology=topology,
        hosts=chips(topology) // per_host,
        chips_per_host=per_host,
        machine_type=gen.machine_types[per_host],
        node_selector=MappingProxyType(selector),
        resource_name=TPU_RESOURCE,
        machine_chips=per_host,
        dynamic_slicing=dynamic_slicing,
    )


def check_multislice(accelerator: Accelerator, num_slices: int) -> None:
    """GKE runs multislice only over multi-host slice node pools (one slice per pool)."""
    if num_slices > 1 and accelerator.kind == "tpu" and not accelerator.multi_host:
        raise ValueError(
            f"{accelerator.name} is a single-host slice, and GKE's multislice needs multi-host "
            f"slices (num_slices={num_slices}). Use a larger slice, or one slice."
        )
