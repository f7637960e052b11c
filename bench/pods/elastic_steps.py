"""The elastic example's training (``dags/elastic_train.py``), with each step's time: process 0
appends ``{"t", "step", "slices"}`` to ``<output_dir>/steps.jsonl`` as it reports the step,
for ``bench.elastic`` to count the steps done by its deadline. Epoch time, so the bench can
compare it with its own clock on the same machine."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

DAGS = Path(__file__).resolve().parents[2] / "dags"


def train(**kwargs: Any) -> dict[str, Any]:
    from airflow_provider_jax import runtime

    sys.path.insert(0, str(DAGS))
    from elastic_train import train as elastic_train

    report = runtime.report
    steps = Path(runtime.output_dir(), "steps.jsonl")

    def timed(step: int | None = None, **metrics: Any) -> None:
        report(step, **metrics)
        if runtime.process_index() == 0:
            line = {"t": time.time(), "step": step, "slices": metrics.get("slices")}
            with steps.open("a") as out:
                out.write(json.dumps(line) + "\n")

    runtime.report = timed  # type: ignore[assignment]
    return elastic_train(**kwargs)
