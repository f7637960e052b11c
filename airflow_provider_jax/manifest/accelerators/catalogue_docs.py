"""``docs/accelerators.md``, written from the catalogue (``tpu.py``, ``tpu_shapes.py``,
``gpu.py``): ``make docs`` writes it, and a test fails when the page and the code differ, so
no shape, label or machine type is ever typed by hand. Imported by nothing else."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_jax.manifest.accelerators.gpu import MODELS
from airflow_provider_jax.manifest.accelerators.model import (
    GPU_ACCELERATOR_LABEL,
    INSTANCE_TYPE_LABEL,
    TPU_ACCELERATOR_LABEL,
)
from airflow_provider_jax.manifest.accelerators.tpu import (
    ALIASES,
    DYNAMIC_SLICING_GENERATION,
    GENERATIONS,
    TpuGeneration,
    parse_tpu,
)
from airflow_provider_jax.manifest.accelerators.tpu_shapes import (
    CUBE_CHIPS,
    MAX_SIDE,
    SIDE_STEP,
    chips,
)

PAGE = Path(__file__).resolve().parents[3] / "docs" / "accelerators.md"
INTRO = (
    "Generated from the accelerator catalogue (`airflow_provider_jax/manifest/accelerators/`) "
    "by `make docs`; a test fails when this page differs from the code. An `accelerator=` "
    "that is not here, or a shape the rules below do not allow, fails when the DAG is parsed, "
    "with the rule and the closest valid names."
)
GPU_DIRECT_NAMES = {"tcpx": "TCPX", "tcpxo": "TCPXO", "rdma": "RDMA"}


def _code(values: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{v}`" for v in values)


def _machines(machine_types: dict[int, str]) -> str:
    return ", ".join(f"`{m}` ({n})" for n, m in sorted(machine_types.items()))


def _shapes(gen: TpuGeneration) -> str:
    rule = gen.shapes
    fixed = _code(rule.fixed)
    if not rule.max_cubes:
        return fixed
    order = "A ≤ B ≤ C" if rule.ordered else "in any order"
    return (
        f"{fixed}; then any AxBxC of whole {SIDE_STEP}x{SIDE_STEP}x{SIDE_STEP} cubes (each side "
        f"a multiple of {SIDE_STEP}, at most {MAX_SIDE}; {order}), up to {rule.max_cubes} cubes "
        f"({rule.max_cubes * CUBE_CHIPS:,} chips)"
    )


def _generation_row(key: str, gen: TpuGeneration) -> str:
    aliases = sorted(alias for alias, target in ALIASES.items() if target == key)
    names = f"`{gen.prefix}-<count>`, `{gen.prefix}-<shape>`"
    if aliases:
        names += f" (also {_code(aliases)} for `{key}`)"
    counts = "TensorCores (2 a chip)" if gen.cores_per_chip == 2 else "chips"
    return (
        f"| `{key}` | {names} | {counts} | `{gen.gke_accelerator}` "
        f"| {_machines(dict(gen.machine_types))} | {_shapes(gen)} |"
    )


def sample_topologies(gen: TpuGeneration) -> list[str]:
    """Every fixed shape; for a 3-D generation also each power-of-two chip count from one cube
    up, as far as xpk names defaults, and the largest count xpk names: the sizes a reader
    looks up, without shapes no launcher would pick."""
    rule = gen.shapes
    shapes: list[str | None] = list(rule.fixed)
    if rule.max_cubes:
        named = rule.count_defaults
        count = CUBE_CHIPS
        while count <= rule.max_cubes * CUBE_CHIPS and (count in named or count < min(named)):
            shapes.append(rule.for_chips(count))
            count *= 2
        shapes.append(named[max(named)])
    return [s for s in dict.fromkeys(shapes) if s is not None]


def _slice_row(gen: TpuGeneration, topology: str) -> str:
    acc = parse_tpu(gen.count_name(topology))
    return (
        f"| `{acc.name}` | `{acc.topology}` | {acc.hosts} × {acc.chips_per_host} "
        f"| `{acc.node_selector[TPU_ACCELERATOR_LABEL]}` | `{acc.machine_type}` |"
    )


def _gpu_row(name: str) -> str:
    model = MODELS[name]
    xpk = []
    for n, machine in sorted(model.machine_types.items()):
        variants = [m.removeprefix(machine) for m in model.gpu_direct if m.startswith(machine)]
        xpk += [f"{model.xpk_name}-{n}{v}" for v in sorted({"", *variants})]
    stacks: dict[str, list[str]] = {}
    for machine, stack in model.gpu_direct.items():
        stacks.setdefault(GPU_DIRECT_NAMES[stack], []).append(machine)
    direct = [f"{stack} ({_code(machines)})" for stack, machines in stacks.items()]
    return (
        f"| `{name}` | {_code(xpk)} | `{model.label}` "
        f"| {_machines(dict(model.machine_types))} | {', '.join(direct) or 'none'} |"
    )


def page() -> str:
    two_vm = [k for k, g in GENERATIONS.items() if len(g.layouts("2x4")) > 1]
    out = ["# Accelerators", "", INTRO, "", "## TPU generations", ""]
    out += [
        "The `tpu-` prefix is optional. A name gives the slice by its count (the chips, or "
        "the TensorCores where the table says so) or by its shape, `<prefix>-<AxB>` or "
        "`<prefix>-<AxBxC>`. A count with several shapes means xpk's default one. Each host is "
        "one VM (one pod, one JAX process) of the machine type whose chips it holds.",
        "",
        "| generation | names | the count is | `gke-tpu-accelerator` | machine type (chips a VM) "
        "| shapes |",
        "|---|---|---|---|---|---|",
    ]
    out += [_generation_row(key, gen) for key, gen in GENERATIONS.items()]
    out += [
        "",
        f"A `2x4` slice of {' or '.join(f'`{k}`' for k in two_vm)} is two 4-chip VMs by default, as xpk and most node "
        "pools run it; `chips_per_host=8` asks for the single 8-chip VM, and the machine type "
        f"then joins the node selector (`{INSTANCE_TYPE_LABEL}`), since both pools carry the "
        f"topology `2x4`. Multislice (`num_slices` > 1) needs a multi-host slice. GKE's "
        f"dynamic slicing ([Ironwood](ironwood.md)) carves `{DYNAMIC_SLICING_GENERATION}` "
        "slices only.",
        "",
        "## TPU slices",
        "",
        "Every fixed shape, and for the 3-D generations the shape of each power-of-two size and "
        "of the largest slice.",
        "",
        "| accelerator | topology | hosts × chips per host | `gke-tpu-accelerator` "
        "| machine type |",
        "|---|---|---|---|---|",
    ]
    for gen in GENERATIONS.values():
        out += [_slice_row(gen, t) for t in sorted(sample_topologies(gen), key=chips)]
    out += [
        "",
        "## GPUs",
        "",
        "A model with `gpus_per_node=`, or xpk's device type, which carries the GPUs per node. "
        f"The pods select `{GPU_ACCELERATOR_LABEL}`. A multi-node job on a machine type with "
        "GPUDirect gets its networking ([GKE prerequisites](gke-prerequisites.md)).",
        "",
        f"| model | xpk device types | `{GPU_ACCELERATOR_LABEL}` | machine type (GPUs a node) "
        "| GPUDirect |",
        "|---|---|---|---|---|",
    ]
    out += [_gpu_row(name) for name in MODELS]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    PAGE.write_text(page())
