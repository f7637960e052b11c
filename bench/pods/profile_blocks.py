"""The quickstart's step reporting its loss every step, timed in blocks before and after a
window of steps that ``profile_steps`` may trace: what the profiler costs the steps outside
its window (the window itself is the price asked for)."""

from __future__ import annotations

import time
from typing import Any

from report_blocks import quickstart_step


def train(blocks: int, steps_per_block: int, window: int) -> dict[str, Any]:
    """``{"outside": [...]}``: the seconds per step of each block outside the window, which
    starts after ``blocks // 2`` blocks (steps counted from 0 as report(step=) sees them)."""
    import jax

    from airflow_provider_jax.runtime import report

    step, params, opt_state = quickstart_step()
    outside: list[float] = []
    i = 0
    for block in range(blocks + 1):
        in_window = block == blocks // 2
        count = window if in_window else steps_per_block
        started = time.perf_counter()
        for _ in range(count):
            params, opt_state, loss = step(params, opt_state)
            report(step=i, loss=loss)
            i += 1
        jax.block_until_ready(params)
        if not in_window:
            outside.append((time.perf_counter() - started) / count)
    return {"outside": outside, "window_start": (blocks // 2) * steps_per_block}
