"""What the local processes compute on: this machine's own NVIDIA GPUs for a GPU job, else
the CPU standing in for every chip.

``[jax] local_accelerators`` chooses: ``auto`` hands a GPU job's processes the GPUs this
machine shows, ``gpus_per_node`` consecutive ones each in host order; ``cpu`` never looks.
TPU jobs always run on the CPU here: a TPU VM's chips belong to one process per host, which a
local run of several hosts cannot share out.

The GPUs are those ``nvidia-smi -L`` lists, else the driver's ``/proc/driver/nvidia/gpus``
entries, narrowed to the worker's own ``CUDA_VISIBLE_DEVICES`` when that is set. Processes
count them in PCI bus order (``CUDA_DEVICE_ORDER=PCI_BUS_ID``), the order ``nvidia-smi``
numbers them in, so the task log's indices are the ones ``nvidia-smi`` shows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from airflow_provider_jax.arguments import one_of
from airflow_provider_jax.backends.local.pods import PodPlan
from airflow_provider_jax.manifest.accelerators.model import GPU_RESOURCE

AUTO, CPU = "auto", "cpu"
SETTINGS = (AUTO, CPU)
SETTING_NAME = "[jax] local_accelerators"
PROC_GPUS = "/proc/driver/nvidia/gpus"
_NVIDIA_SMI_TIMEOUT_S = 30.0


class TooFewGpus(ValueError):
    """A GPU job asks for more GPUs than this machine shows; raised before any process."""


@dataclass(frozen=True)
class Gpu:
    """One GPU as ``nvidia-smi`` numbers it: what ``CUDA_VISIBLE_DEVICES`` takes, and its
    model for the log."""

    index: str
    model: str = ""
    uuid: str = ""


@dataclass(frozen=True)
class Placement:
    """Which GPUs each pod gets, by pod name (none: the CPU stands in), and what the task log
    says about it, once per run."""

    gpus: Mapping[str, tuple[Gpu, ...]] = field(default_factory=dict)
    lines: tuple[str, ...] = ()

    def of(self, plan: PodPlan) -> tuple[str, ...]:
        """The ``CUDA_VISIBLE_DEVICES`` entries of ``plan``'s process (none: CPU)."""
        return tuple(gpu.index for gpu in self.gpus.get(plan.name, ()))


def visible_gpus(env: Mapping[str, str], proc_gpus: str = PROC_GPUS) -> list[Gpu]:
    """The NVIDIA GPUs a process started with ``env`` may use, in ``nvidia-smi``'s order."""
    gpus = _from_nvidia_smi(env) or _from_proc(proc_gpus)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return gpus
    # CUDA reads the list up to its first invalid entry; an empty list or -1 hides them all.
    by_name = {g.index: g for g in gpus} | {g.uuid: g for g in gpus if g.uuid}
    chosen: list[Gpu] = []
    for entry in (e.strip() for e in visible.split(",")):
        if entry not in by_name:
            break
        chosen.append(by_name[entry])
    return chosen


def _from_nvidia_smi(env: Mapping[str, str]) -> list[Gpu]:
    """``GPU <i>: <model> (UUID: GPU-...)`` lines; MIG instances (indented) are not listed."""
    command = shutil.which("nvidia-smi", path=env.get("PATH", os.defpath))
    if command is None:
        return []
    try:
        out = subprocess.run(
            [command, "-L"],
            capture_output=True,
            text=True,
            timeout=_NVIDIA_SMI_TIMEOUT_S,
            env=dict(env),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in out.stdout.splitlines() if out.returncode == 0 else ():
        head, _, rest = line.partition(":")
        if line.startswith("GPU ") and head[4:].isdigit():
            model, _, uuid = rest.partition("(UUID:")
            gpus.append(Gpu(head[4:], model.strip(), uuid.strip().rstrip(")")))
    return gpus


def _from_proc(proc_gpus: str) -> list[Gpu]:
    """The driver's own entries, one folder per GPU named by its PCI bus id: the order
    ``nvidia-smi`` and ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` number them in."""
    try:
        folders = sorted(p for p in Path(proc_gpus).iterdir() if p.is_dir())
    except OSError:
        return []
    gpus = []
    for i, folder in enumerate(folders):
        model = ""
        try:
            for line in (folder / "information").read_text().splitlines():
                if line.startswith("Model:"):
                    model = line.partition(":")[2].strip()
        except OSError:
            pass
        gpus.append(Gpu(str(i), model))
    return gpus


def place(
    plans: Sequence[PodPlan],
    setting: str,
    env: Mapping[str, str],
    proc_gpus: str = PROC_GPUS,
) -> Placement:
    """Hand a GPU job's processes their GPUs, or say why the CPU stands in. Raises
    :class:`TooFewGpus` before anything starts when the machine shows too few."""
    one_of(SETTING_NAME, setting, SETTINGS)
    gpu_plans = [p for p in plans if p.accelerator_resource == GPU_RESOURCE]
    if not gpu_plans:
        return Placement(lines=(_cpu_line(plans, "TPU chips are emulated on the CPU locally"),))
    if setting == CPU:
        return Placement(lines=(_cpu_line(plans, f"{SETTING_NAME} = cpu"),))
    gpus = visible_gpus(env, proc_gpus)
    if not gpus:
        return Placement(lines=(_cpu_line(plans, "no NVIDIA GPU is visible here"),))
    wanted = sum(p.chips for p in gpu_plans)
    if wanted > len(gpus):
        raise TooFewGpus(
            f"The job asks for {wanted} GPU(s) ({len(gpu_plans)} process(es) x "
            f"gpus_per_node={gpu_plans[0].chips}), but this machine shows {len(gpus)} "
            f"({', '.join(g.index for g in gpus)}). Ask for at most {len(gpus)} "
            "(gpus_per_node x num_nodes), or run on the CPU instead: set "
            f"{SETTING_NAME} = cpu (AIRFLOW__JAX__LOCAL_ACCELERATORS=cpu)."
        )
    handed: dict[str, tuple[Gpu, ...]] = {}
    free = iter(gpus)
    for plan in sorted(gpu_plans, key=lambda p: (p.slice_index, p.host_index)):
        handed[plan.name] = tuple(next(free) for _ in range(plan.chips))
    lines = tuple(
        f"{plan.tag} runs on GPU {', '.join(g.index for g in handed[plan.name])}"
        f"{_models(handed[plan.name])} (CUDA_VISIBLE_DEVICES, JAX_PLATFORMS=cuda)."
        for plan in gpu_plans
    )
    return Placement(handed, lines)


def _models(gpus: Sequence[Gpu]) -> str:
    models = sorted({g.model for g in gpus if g.model})
    return f" ({', '.join(models)})" if models else ""


def _cpu_line(plans: Sequence[PodPlan], why: str) -> str:
    chips = plans[0].chips if plans else 1
    return (
        f"Local processes run on the CPU ({why}): each has {chips} CPU device(s) standing in "
        "for its host's accelerators (JAX_PLATFORMS=cpu)."
    )
