"""The local backend on this machine's NVIDIA GPUs: a GPU job's function gives the CPU's
result, and costs no more than bare JAX on the same GPUs.

Made for a GPU machine that may have no Airflow and no network: everything here (the manifest,
the pods' plans, ``[jax] local_accelerators``' placement, the pod init and the runtime) is
the provider's own Airflow-free code, carried with the repository. Each pod runs through the
process layer the backend uses (``PodProcess``: its init, log pipes and termination message),
against the very same pods started by bare ``Popen`` with the same env and GPUs. Runs alternate
in pairs, which side goes first alternating too; the figure is the median wall-time ratio.
Target: <= 1.02x. Without a GPU it says so and exits 0.

    python -m bench.local_gpu [--reps 5] [--steps 2000] [--gpus-per-process 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.devices import AUTO, CPU, place, visible_gpus
from airflow_provider_jax.backends.local.processes import process_env
from airflow_provider_jax.manifest.accelerators import parse_gpu
from airflow_provider_jax.runtime.env import TERMINATION_PATH_ENV
from bench.targets import Targets, quick
from bench.timed_jobs import PYTHONPATH, fresh_plans, job_manifest, result_of, through_backend

TARGET = 1.02
RATIO = "median wall-time ratio, backend / bare JAX on the GPU"
LOSS_RTOL = 1e-3  # float32 on two platforms: reductions run in different orders


def by_hand(manifest: dict[str, Any], on_gpus: bool) -> tuple[float, dict[str, Any]]:
    """Bare ``Popen`` of every pod with its env: the physical limit."""
    plans = fresh_plans(manifest)
    placement = place(plans, AUTO if on_gpus else CPU, os.environ)
    scratch = [tempfile.mkdtemp(prefix="bench-gpu-") for _ in plans]
    envs = [
        process_env(p, tmp, PYTHONPATH, gpus=placement.of(p))
        for p, tmp in zip(plans, scratch, strict=True)
    ]
    started = time.time()
    processes = [
        subprocess.Popen(p.argv, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
        for p, env in zip(plans, envs, strict=True)
    ]
    codes = [p.wait() for p in processes]
    wall = time.time() - started
    message = Path(envs[0][TERMINATION_PATH_ENV]).read_text()
    for tmp in scratch:
        shutil.rmtree(tmp, ignore_errors=True)
    if any(codes):
        raise RuntimeError(f"a process failed by hand: exit codes {codes}")
    return wall, result_of(message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=quick(5, 1))
    parser.add_argument("--steps", type=int, default=quick(2000, 50))
    parser.add_argument("--gpus-per-process", type=int, default=1)
    args = parser.parse_args()

    gpus = visible_gpus(os.environ)
    if not gpus:
        print("No NVIDIA GPU visible (nvidia-smi -L, /proc/driver/nvidia/gpus): nothing to run.")
        print(f"  {RATIO}: not measured  (target <= {TARGET}x)  no GPU here")
        return
    processes = max(1, min(2, len(gpus) // args.gpus_per_process))
    gpus_each = args.gpus_per_process
    accelerator = parse_gpu("h100", gpus_per_node=gpus_each, num_nodes=processes)
    manifest = job_manifest("bench-gpu", accelerator, args.steps)
    print(f"GPUs: {', '.join(f'{g.index} {g.model}' for g in gpus)}")
    print(f"{processes} process(es) x {args.gpus_per_process} GPU, quickstart train({args.steps})")

    _, on_cpu = through_backend(manifest, on_gpus=False)
    _, on_gpu = through_backend(manifest, on_gpus=True)
    print(f"loss: GPU {on_gpu['loss']:.6g}, CPU {on_cpu['loss']:.6g}")
    apart = abs(on_gpu["loss"] - on_cpu["loss"]) / abs(on_cpu["loss"])

    by_hand(manifest, True)  # warm-up of the other side (the GPU runs above warmed ours)
    ratios = []
    for rep in range(args.reps):
        if rep % 2:
            (ours, _), (hand, _) = through_backend(manifest, True), by_hand(manifest, True)
        else:
            (hand, _), (ours, _) = by_hand(manifest, True), through_backend(manifest, True)
        ratios.append(ours / hand)
        print(f"{rep + 1:>3}  by hand {hand:7.3f} s  backend {ours:7.3f} s  ratio {ratios[-1]:.3f}")
    targets = Targets()
    targets.at_most("the loss's relative difference, GPU vs CPU", apart, LOSS_RTOL)
    targets.at_most(RATIO, statistics.median(ratios), TARGET, "x")
    targets.exit()


if __name__ == "__main__":
    main()
