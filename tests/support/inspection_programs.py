"""Functions the diagnostics tests run inside JAX processes (profiles, debug dumps, checkpoint
freshness), by entrypoint ``tests.support.inspection_programs:<name>``: beside
``tests.support.programs``, imported the same way."""

from __future__ import annotations

import os
import time

from airflow_provider_jax.runtime import process_index, report
from tests.support.programs import fail_on


def profiled_steps(steps: int = 8) -> int:
    """A jitted step per report(step=...), the loss passed as the device array it is."""
    import jax
    import jax.numpy as jnp

    step = jax.jit(lambda x: (x @ x.T).mean())
    x = jnp.ones((64, 64)) * (process_index() + 1)
    for i in range(steps):
        report(step=i, loss=step(x + i))
    return steps


def profiled_against_itself(mode: str, steps: int = 12, every: int = 1) -> int:
    """profile_steps beside what a program may do itself: its own ``jax.profiler`` trace
    around the loop (``own_trace``) or inside the window (``own_trace_inside``, as
    ``jax.profiler.trace`` is used), a ``runtime.profile()`` block over the window (``block``),
    a step that is no integer (``text_step``), or reports every ``every`` steps (``sparse``)."""
    import tempfile

    import jax
    import jax.numpy as jnp

    from airflow_provider_jax.runtime import profile

    step = jax.jit(lambda x: (x @ x.T).mean())
    x = jnp.ones((32, 32))
    if mode == "own_trace":
        jax.profiler.start_trace(tempfile.mkdtemp())
    if mode == "text_step":
        report(step="abc", loss=0.0)
    with profile() if mode == "block" else _nothing():
        for i in range(steps):
            if mode == "own_trace_inside" and i == 6:  # profile_steps=(5, 3) traces steps 5-7
                with jax.profiler.trace(tempfile.mkdtemp()):
                    loss = step(x + i)
            else:
                loss = step(x + i)
            if i % every == 0:
                report(step=i, loss=loss)
    if mode == "own_trace":
        jax.profiler.stop_trace()
    return steps


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def profiled_block() -> str:
    """No report at all: a block in runtime.profile()."""
    import jax
    import jax.numpy as jnp

    from airflow_provider_jax.runtime import profile

    with profile():
        jax.jit(lambda x: x * 2)(jnp.ones(8)).block_until_ready()
    return "profiled"


def fails_after_compiling(process: int = 1) -> None:
    """Compiles (and runs) one module; then process ``process`` writes a line to fd 2 below
    Python and raises, while the others wait for it in a collective."""
    import jax
    import jax.numpy as jnp

    jax.jit(lambda x: jnp.sin(x) * 3)(jnp.ones(4)).block_until_ready()
    if process_index() == process:
        print("a line from Python before the failure", flush=True)
        os.write(2, b"a line written to fd 2 as XLA's C++ logs are\n")
        raise RuntimeError(f"bad batch on process {process_index()}")
    fail_on(process)


def saves_once_then_trains(seconds: float = 3.0) -> int:
    """Process 0 saves step 1 with Orbax, then every process reports steps for ``seconds``
    without saving again (no jax.distributed: each process on its own)."""
    if process_index() == 0:
        import numpy as np
        import orbax.checkpoint as ocp

        from airflow_provider_jax.runtime import checkpoint_dir

        with ocp.CheckpointManager(checkpoint_dir()) as manager:
            manager.save(1, args=ocp.args.StandardSave({"x": np.zeros(2)}))
            manager.wait_until_finished()
    step, ends = 1, time.monotonic() + seconds
    while time.monotonic() < ends:
        step += 1
        report(step=step)
        time.sleep(0.05)
    return step
