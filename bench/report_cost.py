"""What ``runtime.report()`` every step costs the training loop: the quickstart's step
(``bench/pods/report_blocks.py``), run through the pods' process layer (its lines read from a
pipe, as the backend reads them), reporting its loss (a JAX array) every step in one block of
steps and never in another, blocks taking turns. Per-block step times, in one process, keep
the start-up's and compilation's noise out of the figure; a third block converts the loss on
the spot (``float(loss)``), as the quickstart did, for comparison. Target: median step time
with ``report(loss=loss)`` / without <= 1.02x. On this machine's GPU when it has one (``--cpu`` forces the
CPU), else on the CPU. Needs no Airflow, so a GPU machine without it runs it.

    python -m bench.report_cost [--blocks 20] [--steps 2000] [--cpu]
"""

from __future__ import annotations

import argparse
import statistics

from bench.targets import Targets, quick
from bench.timed_jobs import ONE_GPU, one_process_bench, pod_manifest, through_backend

TARGET = 1.02
RATIO = "step time, report() every step / none (median of blocks)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=quick(20, 2))
    parser.add_argument("--steps", type=int, default=quick(2000, 100), help="per block")
    args, on_gpu, where = one_process_bench(parser)
    accelerator = ONE_GPU
    kwargs = {"blocks": args.blocks, "steps_per_block": args.steps}
    manifest = pod_manifest("bench-report", accelerator, "report_blocks:train", kwargs)
    _, seconds = through_backend(manifest, on_gpus=on_gpu)
    array, converted, none = (statistics.median(seconds[m]) for m in ("array", "float", "none"))
    print(f"1 process on the {where}, {args.blocks} rounds of 3 blocks of {args.steps} steps:")
    print(f"  step without report(): {none * 1e6:.1f} us")
    for what, took in (("report(loss=loss)", array), ("report(loss=float(loss))", converted)):
        print(f"  with {what}: {took * 1e6:.1f} us, {(took - none) * 1e6:.2f} us a call")
    targets = Targets()
    targets.at_most(f"{RATIO}, {where}", array / none, TARGET, "x")
    targets.exit()


if __name__ == "__main__":
    main()
