"""A training loop that times its own recovery (``bench.recovery``): every process appends
what it does to ``<output_dir>/events.jsonl`` (all pods share this machine's disk here), and
host 1 of slice 0 dies by SIGKILL at step ``kill_at`` on a fresh start, as a host lost to a
hardware fault does. With a local tier it checkpoints through ``runtime.multi_tier`` (host
memory every ``local_every`` steps); without one, to ``<output_dir>/checkpoints`` only."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from host_loss import lose_this_host


def _killed() -> Path:
    """The mark the killed host leaves first: the attempts after it see it. Not the runtime's
    restart attempt: after an in-place restart the kubelet may hand a container the attempt
    before (a fieldRef env resolved from its cached pod; docs/testing.md)."""
    from airflow_provider_jax.runtime import output_dir

    assert output_dir() is not None
    return Path(output_dir(), "killed")


ATTEMPT = {"now": 0}  # 1 once host 1 was killed: fixed when the process starts


def _event(kind: str, **fields: Any) -> None:
    from airflow_provider_jax.runtime import output_dir, process_index

    assert output_dir() is not None
    line = {"t": time.time(), "cpu": time.process_time(), "event": kind, "host": process_index(),
            "attempt": ATTEMPT["now"], **fields}  # fmt: skip
    with Path(output_dir(), "events.jsonl").open("a") as out:
        out.write(json.dumps(line) + "\n")


def _process_began() -> float:
    """When this process began (the container's, which ``exec``s Python), from /proc: the
    end of ``bench.recovery``'s restart phase."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    booted = time.time() - float(Path("/proc/uptime").read_text().split()[0])
    return booted + ticks / os.sysconf("SC_CLK_TCK")


def train(
    steps: int = 30,
    kill_at: int = 18,
    persistent_every: int = 10,
    local_every: int = 2,
    step_s: float = 0.3,
) -> dict[str, Any]:
    ATTEMPT["now"] = int(_killed().exists())
    _event("start", began=_process_began())  # the interpreter is up: the pod started
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    from airflow_provider_jax.runtime import multi_tier, process_index

    slices = int(os.environ.get("MEGASCALE_NUM_SLICES", "1"))
    mesh = Mesh(np.array(jax.devices()).reshape(slices, -1), ("replica", "data"))
    sharding = NamedSharding(mesh, P("data"))
    abstract = {"w": jax.ShapeDtypeStruct((64,), jnp.float32, sharding=sharding)}
    manager = multi_tier.checkpoint_manager(
        mesh, abstract, local_every=local_every, persistent_every=persistent_every
    )
    _event("jax_init")
    state, resumed = multi_tier.restore_latest(manager, abstract)
    if state is None:
        state = {"w": jax.device_put(jnp.zeros(64, jnp.float32), sharding)}
    _event("restored", step=resumed)
    total = jax.jit(lambda w: w.sum())
    for step in range(0 if resumed is None else resumed + 1, steps):
        time.sleep(step_s)  # the accelerator's work
        state = {"w": state["w"] + 1}
        float(total(state["w"]))  # a collective every step, as training has
        multi_tier.save(manager, step, state)
        _event("step", step=step)
        if step == kill_at and ATTEMPT["now"] == 0 and process_index() == 1:
            manager.wait_until_finished()
            _event("kill", step=step)
            _killed().touch()
            lose_this_host()
    manager.wait_until_finished()
    return {"resumed_from": resumed, "attempt": ATTEMPT["now"]}
