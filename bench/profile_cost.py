"""What ``profile_steps`` costs the steps outside its window: the quickstart's step reporting
its loss every step (``bench/pods/profile_blocks.py``), through the pods' process layer, in
runs with a window of traced steps and runs without, taking turns. Each run times blocks of
steps before and after the window; the figure is the median over runs of each run's median
block. Target: with / without <= 1.02x. On this machine's GPU when it has one (``--cpu``
forces the CPU), else on the CPU. Needs no Airflow.

    python -m bench.profile_cost [--runs 5] [--blocks 8] [--steps 1000] [--window 20] [--cpu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

from bench.targets import Targets, quick
from bench.timed_jobs import ONE_GPU, one_process_bench, pod_manifest, through_backend

TARGET = 1.02
RATIO = "step time outside the window, profile_steps / none (median of runs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=quick(5, 1), help="of each kind")
    parser.add_argument("--blocks", type=int, default=quick(8, 2))
    parser.add_argument("--steps", type=int, default=quick(1000, 50), help="per block")
    parser.add_argument("--window", type=int, default=quick(20, 5), help="steps traced")
    args, on_gpu, where = one_process_bench(parser)
    accelerator = ONE_GPU
    kwargs = {"blocks": args.blocks, "steps_per_block": args.steps, "window": args.window}
    window_start = (args.blocks // 2) * args.steps
    medians: dict[str, list[float]] = {"profiled": [], "none": []}
    after: dict[str, list[float]] = {"profiled": [], "none": []}  # the blocks past the window
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as output_dir:
        for run in range(args.runs):
            kinds = ["profiled", "none"] if run % 2 == 0 else ["none", "profiled"]
            for kind in kinds:
                diagnostics = {"try_number": run}
                if kind == "profiled":
                    diagnostics["profile_steps"] = [window_start, args.window]
                    diagnostics["diagnostics_dir"] = output_dir
                manifest = pod_manifest(
                    "bench-profile", accelerator, "profile_blocks:train", kwargs, diagnostics
                )
                _, result = through_backend(manifest, on_gpus=on_gpu)
                medians[kind].append(statistics.median(result["outside"]))
                after[kind].append(statistics.median(result["outside"][args.blocks // 2 :]))
        traces = sum(1 for _, _, files in os.walk(output_dir) for f in files if "xplane" in f)
    profiled, none = (statistics.median(medians[k]) for k in ("profiled", "none"))
    print(
        f"1 process on the {where}, {args.runs} runs of each kind, {args.blocks} blocks of "
        f"{args.steps} steps outside a window of {args.window} (traces written: {traces}):"
    )
    print(f"  step without profile_steps: {none * 1e6:.1f} us")
    print(f"  step outside the window with profile_steps: {profiled * 1e6:.1f} us")
    past = [statistics.median(after[k]) * 1e6 for k in ("profiled", "none")]
    print(f"  after the window only: {past[0]:.1f} us with, {past[1]:.1f} us without")
    if traces != args.runs:
        raise RuntimeError(f"expected one trace per profiled run, found {traces}")
    targets = Targets()
    targets.at_most(f"{RATIO}, {where}", profiled / none, TARGET, "x")
    targets.exit()


if __name__ == "__main__":
    main()
