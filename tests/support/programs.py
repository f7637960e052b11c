"""Functions the tests run inside JAX processes, by entrypoint ``tests.support.programs:<name>``.

Processes import this module with the repository root on PYTHONPATH; the runtime itself comes
from the launcher's zip, as it would in a pod.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from airflow_provider_jax.runtime import process_index, report, restart_attempt


def collective() -> dict[str, Any]:
    """Sum a global array sharded over every device, and gather each process's place."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()), ("devices",))
    # Every device of process p holds p + 1, so the sum is local_devices * P * (P + 1) / 2.
    local = np.full(jax.local_device_count(), jax.process_index() + 1, np.float32)
    global_array = jax.make_array_from_process_local_data(
        NamedSharding(mesh, PartitionSpec("devices")), local
    )
    total = float(jax.jit(jnp.sum)(global_array))
    place = [
        jax.process_index(),
        int(os.environ.get("MEGASCALE_SLICE_ID", "0")),
        int(os.environ["AIRFLOW_JAX_HOST_INDEX"]),
    ]
    report(step=1, total=total, process=jax.process_index())
    return {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "device_count": jax.device_count(),
        "local_device_count": jax.local_device_count(),
        "total": total,
        "places": multihost_utils.process_allgather(np.array(place)).tolist(),
        "restart_attempt": restart_attempt(),
    }


def fail_on(process: int) -> None:
    """Process ``process`` raises; the others wait for it in a collective, forever."""
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    if jax.process_index() == process:
        raise ValueError(f"boom from process {process}")
    multihost_utils.process_allgather(np.zeros(1))


def leader_returns_then_host_fails(process: int = 1) -> str:
    """The leader returns at once; process ``process`` raises a moment later, before the
    processes' shutdown barrier."""
    import jax

    if jax.process_index() == process:
        time.sleep(1)
        raise ValueError(f"late boom from process {process}")
    return "the leader's value"


def fails_while_its_peer_is_still_exiting(marker: str) -> None:
    """Process 1 raises, and once its runtime has reported the error it is slow to end (a
    step of the runtime's exit that waits: on a loaded machine the pod's end can come after
    its peer's); process 0 then fails on the lost connection with the error JAX raised for it
    in a real run of ``train_with_resume`` (a lost peer)."""
    import jax

    from airflow_provider_jax.runtime import exits

    done = Path(marker)
    if process_index() == 1:
        exits.before_exit(lambda: (done.touch(), time.sleep(3600)))
        raise ValueError("a bug on process 1")
    while not done.exists():
        time.sleep(0.05)
    raise jax.errors.JaxRuntimeError(
        "UNKNOWN: Gloo AllGather failed: [external/gloo/gloo/transport/tcp/pair.cc:538] "
        "Read error [127.0.0.1]:32460: Connection reset by peer"
    )


def hello() -> str:
    """Every process prints a line; no JAX needed (``initialize_distributed=False``)."""
    print(f"hello from process {process_index()}", flush=True)
    return "ok"


def crash_on_first_attempt() -> dict[str, Any]:
    """Process 1 crashes on a fresh start; after a restart everything succeeds."""
    if restart_attempt() == 0 and process_index() == 1:
        raise RuntimeError("crash on the first attempt")
    return collective()


def killed_on_first_attempt() -> dict[str, Any]:
    """Process 1 dies by SIGKILL on a fresh start, as a preempted host does; its peer then
    loses it mid-collective. After a restart everything succeeds."""
    if restart_attempt() == 0 and process_index() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return collective()


def local_tier_survives_a_restart() -> dict[str, Any]:
    """Each process counts its starts in its local checkpoint tier; the leader dies by
    SIGKILL on its first, after counting. After the restart it finds its count there."""
    from airflow_provider_jax.runtime import local_checkpoint_dir

    tier = local_checkpoint_dir()
    assert tier is not None, "no local checkpoint tier"
    marker = Path(tier, "starts")
    starts = int(marker.read_text()) if marker.exists() else 0
    marker.write_text(str(starts + 1))
    if restart_attempt() == 0 and process_index() == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"process": process_index(), "starts_before": starts, "tier": tier}


def lose_peer_midway() -> None:
    """Collectives in a loop; process 1 dies by SIGKILL at the fourth, as a preempted host."""
    import numpy as np
    from jax.experimental import multihost_utils

    for step in range(10_000):
        if step == 3 and process_index() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        multihost_utils.process_allgather(np.full(1, step))


def train_with_resume(
    steps: int = 30, save_every: int = 10, die_at: int | None = 25, bug_at: int | None = None
) -> dict[str, Any]:
    """Count ``w`` up one per step over both processes, with a real Orbax save every
    ``save_every`` steps in ``checkpoint_dir()``, resuming from ``resumed_from()``. On the first
    attempt process 1 dies by SIGKILL at step ``die_at``, after step 20 was finalized; or, in a
    run that did not resume, raises ValueError at step ``bug_at`` (a bug the next try avoids)."""
    import jax
    import numpy as np
    import orbax.checkpoint as ocp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from airflow_provider_jax.runtime import checkpoint_dir, resumed_from

    replicated = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), PartitionSpec())
    options = ocp.CheckpointManagerOptions(enable_async_checkpointing=False, create=True)
    manager = ocp.CheckpointManager(checkpoint_dir(), options=options)
    start = resumed_from()
    w = jax.device_put(np.float32(0), replicated)
    if start is not None:
        w = manager.restore(start, args=ocp.args.StandardRestore({"w": w}))["w"]
    for step in range((start or 0) + 1, steps + 1):
        if step == die_at and restart_attempt() == 0 and process_index() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == bug_at and start is None and process_index() == 1:
            raise ValueError(f"a bug at step {step}")
        w = jax.device_put(w + 1, replicated)
        report(step=step, w=float(w))
        if step % save_every == 0:
            manager.save(step, args=ocp.args.StandardSave({"w": w}))
    manager.close()
    return {"resumed_from": start, "w": float(w), "restart_attempt": restart_attempt()}


def preempted_once(steps: int = 30, notice_at: int = 10) -> dict[str, Any]:
    """Count ``w`` up one per step over both processes, in lock-step (a barrier per step),
    saving with Orbax from an ``on_preemption`` hook. On the first attempt host 1 gets SIGTERM
    at step ``notice_at`` (a preemption notice) and the attempt runs on until the hook has
    saved at the step JAX agreed on; the restart resumes from that step and finishes."""
    import itertools

    import jax
    import numpy as np
    import orbax.checkpoint as ocp
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from airflow_provider_jax.runtime import checkpoint_dir, on_preemption, resumed_from

    replicated = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), PartitionSpec())
    options = ocp.CheckpointManagerOptions(enable_async_checkpointing=False, create=True)
    manager = ocp.CheckpointManager(checkpoint_dir(), options=options)
    start = resumed_from()
    state = {"w": jax.device_put(np.float32(0), replicated)}
    if start is not None:
        state = manager.restore(start, args=ocp.args.StandardRestore(state))

    def save_last(step: int) -> None:
        manager.save(step, args=ocp.args.StandardSave(state), force=True)
        manager.wait_until_finished()

    on_preemption(save_last)
    first = restart_attempt() == 0
    for step in itertools.count((start or 0) + 1):
        if (step > steps and not first) or step > 100_000:
            break  # the first attempt ends only through the hook
        if first and step == notice_at and process_index() == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        multihost_utils.sync_global_devices(f"step {step}")
        state = {"w": jax.device_put(state["w"] + 1, replicated)}
        report(step=step, w=float(state["w"]))
    manager.close()
    return {"resumed_from": start, "w": float(state["w"]), "restart_attempt": restart_attempt()}


def preempted_without_jax(marker: str, save_s: float = 0.0) -> dict[str, Any]:
    """No JAX: SIGTERM on host 1's first attempt at step 3 runs the hook at its next report,
    which writes ``marker`` (after ``save_s`` seconds, a save's time); then the process exits
    143 and the set restarts."""
    from airflow_provider_jax.runtime import on_preemption

    def save(step: int) -> None:
        time.sleep(save_s)
        Path(marker).write_text(f"{process_index()}:{step}")

    on_preemption(save)
    for step in range(1, 6):
        if step == 3 and restart_attempt() == 0 and process_index() == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        report(step=step)
    return {"restart_attempt": restart_attempt()}


def steady_steps(steps: int, step_s: float) -> int:
    """Report ``steps`` steps at a steady rate: the ETA of a run of ``total_steps``."""
    for step in range(1, steps + 1):
        time.sleep(step_s)
        report(step=step)
    return steps


def sleep_forever() -> None:
    time.sleep(3600)


def hang_once(steps: int = 20, at: int = 10) -> dict[str, Any]:
    """Report every step; process 1 stops reporting at step ``at`` of the first attempt."""
    for step in range(steps):
        if step == at and process_index() == 1 and restart_attempt() == 0:
            sleep_forever()
        report(step=step, loss=1.0 / (step + 1))
        time.sleep(0.05)
    return {"steps": steps, "restart_attempt": restart_attempt()}


def hang(pid_dir: str) -> None:
    """Record this process's pid and a child's, then hang (no JAX needed)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(pid_dir, f"{os.getpid()}.pid").write_text(f"{os.getpid()} {child.pid}")
    while True:
        time.sleep(1)


def echo(**kwargs: Any) -> dict[str, Any]:
    report(step=3, loss=0.25)
    return {"kwargs": kwargs, "process": process_index()}


def secret_digests(names: list[str]) -> dict[str, str | None]:
    """What a process sees of its secret env vars, without returning them: their digests."""
    import hashlib

    return {
        n: hashlib.sha256(os.environ[n].encode()).hexdigest() if n in os.environ else None
        for n in names
    }


def large(size: int) -> str:
    return "x" * size


def not_json() -> set[int]:
    return {1, 2}


def nan() -> float:
    return float("nan")


def pathways_env() -> dict[str, Any]:
    """What a Pathways head's function sees before it touches JAX."""
    import sys

    return {"ready": os.environ.get("PATHWAYS_READY"), "jax_imported": "jax" in sys.modules}


def read_dataset(dataset: str) -> dict[str, Any]:
    """Each host's view of a Data input: its path and what the files hold."""
    from pathlib import Path

    files = sorted(p for p in Path(dataset).rglob("*") if p.is_file())
    return {
        "host": process_index(),
        "files": {str(p.relative_to(dataset)): p.read_text() for p in files},
    }


def broken() -> None:
    raise KeyError("missing-key")


def names_its_own_result(result_uri: str) -> None:
    """Hostile pod code: write a success message naming ``result_uri`` and exit 0 before the
    runtime writes its own. Needs no bug in the runtime, only the termination-message path."""
    from airflow_provider_jax.runtime.env import DEFAULT_TERMINATION_PATH, TERMINATION_PATH_ENV
    from airflow_provider_jax.runtime.messages import success_message

    path = os.environ.get(TERMINATION_PATH_ENV, DEFAULT_TERMINATION_PATH)
    Path(path).write_text(success_message(result_uri=result_uri))
    sys.stdout.flush()
    os._exit(0)


def chatty(lines: int, width: int) -> str:
    """Print ``lines`` short lines and one of ``width`` characters: a log flood."""
    import sys

    for i in range(lines):
        sys.stdout.write(f"line {i}\n")
    sys.stdout.write("x" * width + "\n")
    sys.stdout.flush()
    return "done"


def leaves_a_child(pid_file: str) -> str:
    """Start a process in a session of its own (it escapes process-group kills) that holds
    the pod's output pipe for ever, and return."""
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(1e9)"], start_new_session=True
    )
    Path(pid_file).write_text(str(child.pid))
    return "returned at once"


def multi_tier_train(steps: int = 12, kill_at: int = 9) -> dict[str, Any]:
    """Two "slices" (one process each, the mesh's replica axis) train with both checkpoint
    tiers: host memory every 2 steps, ``<output_dir>/checkpoints`` every 5. Process 1 dies by
    SIGKILL after saving step ``kill_at`` on a fresh start; the restart resumes from the
    newest step Orbax finds, and says which."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    from airflow_provider_jax.runtime import multi_tier

    slices = int(os.environ.get("MEGASCALE_NUM_SLICES", "1"))
    devices = np.array(jax.devices()).reshape(slices, -1)
    mesh = Mesh(devices, ("replica", "data"))
    sharding = NamedSharding(mesh, P("data"))  # a full copy in each slice
    abstract = {"w": jax.ShapeDtypeStruct((8,), jnp.float32, sharding=sharding)}
    manager = multi_tier.checkpoint_manager(mesh, abstract, local_every=2, persistent_every=5)
    state, resumed = multi_tier.restore_latest(manager, abstract)
    if state is None:
        state = {"w": jax.device_put(jnp.zeros(8, jnp.float32), sharding)}
    for step in range(0 if resumed is None else resumed + 1, steps):
        state = {"w": state["w"] + 1}
        multi_tier.save(manager, step, state)
        if step == kill_at and restart_attempt() == 0 and process_index() == 1:
            manager.wait_until_finished()
            os.kill(os.getpid(), signal.SIGKILL)
    manager.wait_until_finished()
    value = float(np.asarray(state["w"].addressable_data(0))[0])
    return {"resumed_from": resumed, "w": value, "attempt": restart_attempt()}


def quickstart_with_tiers(disrupt_at_step: int) -> dict[str, Any]:
    """The example DAGs' training code, checkpointing as ``checkpoint_pipeline`` does."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dags"))
    from quickstart_train import train

    from airflow_provider_jax.runtime import checkpoint_dir

    return train(
        steps=30, checkpoint_dir=checkpoint_dir(), checkpoint_every=10, resume=True,
        disrupt_at_step=disrupt_at_step, report_every=5,
    )  # fmt: skip


def quickstart_evaluate(checkpoint_dir: str, step: int) -> dict[str, Any]:
    """The example DAGs' evaluation of one step, as ``checkpoint_pipeline`` runs it."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dags"))
    from quickstart_train import evaluate

    return evaluate(checkpoint_dir, step)


def device_env() -> str:
    """Every process prints what it was handed to compute on; no JAX needed."""
    names = ("CUDA_VISIBLE_DEVICES", "JAX_PLATFORMS", "CUDA_DEVICE_ORDER", "NCCL_SOCKET_IFNAME")
    seen = {name: os.environ.get(name) for name in names}
    print(f"devices {process_index()} {json.dumps(seen, sort_keys=True)}", flush=True)
    return "ok"


def collective_without_report() -> float:
    """A psum over every device of every process that never calls ``report()``."""
    import jax
    import jax.numpy as jnp

    return float(jax.jit(lambda x: x.sum())(jnp.ones(jax.device_count())))


def raise_name_error() -> None:
    """A bug: a name that was never defined, on host 1 only."""
    import jax

    if jax.process_index() == 1:
        return undefined_name  # type: ignore[name-defined]  # noqa: F821


def raise_connection_error() -> None:
    """The world: a peer or a store that did not answer."""
    raise ConnectionError("the data service did not answer")


def raise_value_error() -> None:
    """Neither, by its class alone."""
    raise ValueError("a value the code did not expect")


def elastic_train(drill: bool = False, **kwargs: Any) -> dict[str, Any]:
    """The elastic example's training code (``dags/elastic_train.py``), as its DAG runs it.

    With ``drill``, the run waits at two points for the drill's moves, so that a busy machine
    cannot finish the job before the drill acts: on its first start, at step 13 once the step
    10 checkpoint is final (``<output_dir>/drill-lose``, then until it is killed); on one
    slice, at step 23 (``<output_dir>/drill-return``, then until the drill says the slice's
    capacity is back: ``<output_dir>/drill-returned``)."""
    import sys
    import time

    from airflow_provider_jax import runtime
    from airflow_provider_jax.runtime import orbax_steps

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dags"))
    from elastic_train import train

    report = runtime.report

    def mark(name: str) -> None:
        if runtime.process_index() == 0:
            Path(runtime.output_dir(), name).touch()

    def gated(step: int | None = None, **metrics: Any) -> None:
        report(step, **metrics)
        if step == 13 and runtime.start_reason() is None:
            names = orbax_steps.StepNameFormat(None, None)
            while orbax_steps.find_newest_local(runtime.checkpoint_dir(), names) is None:
                time.sleep(0.05)
            mark("drill-lose")
            while True:  # until the slice's loss stops the job
                time.sleep(1)
        if step == 23 and runtime.num_slices() == 1:
            mark("drill-return")
            while not Path(runtime.output_dir(), "drill-returned").exists():
                time.sleep(0.05)

    if drill:
        runtime.report = gated  # type: ignore[assignment]
    return train(**kwargs)


def returns_while_saving(
    step: int = 3, megabytes: int = 32, exit_0: bool = False
) -> dict[str, Any] | None:
    """A training loop's last save, async as Orbax's ``CheckpointManager`` saves by default,
    and a return without ``wait_until_finished()``: the step is still being written. With
    ``exit_0`` it ends as scripts do, by ``sys.exit(0)``."""
    import jax
    import numpy as np
    import orbax.checkpoint as ocp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from airflow_provider_jax.runtime import checkpoint_dir

    manager = ocp.CheckpointManager(checkpoint_dir())
    rows = megabytes * 1024 * 1024 // 4 // 1024
    sharded = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), PartitionSpec("d"))
    w = jax.make_array_from_callback(
        (rows, 1024), sharded, lambda index: np.ones((rows, 1024), np.float32)[index]
    )
    manager.save(step, args=ocp.args.StandardSave({"w": w}))
    if exit_0:
        sys.exit(0)
    return {"saved": step, "still_saving": manager.is_saving_in_progress()}


def asks_for_checkpoint_dir() -> str | None:
    """What a checkpointing program asks first: where to save."""
    from airflow_provider_jax.runtime import checkpoint_dir

    return checkpoint_dir()


def jax_options(names: list[str]) -> dict[str, Any]:
    """What JAX's config says for ``names`` in this process."""
    import jax

    return {name: getattr(jax.config, name) for name in names}
