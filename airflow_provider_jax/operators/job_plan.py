"""What follows from a JAX task's arguments together, decided once when the operator is made:
the accelerator its operator parses, the Pathways controller, the capacity list, an elastic
policy, how the job is waited on. Each is typed on its own (:class:`JobPlan`), beside the
arguments as given (``JobArguments``), and every rule between arguments is checked here, at
parse, naming them.

The readers of the routes (``job_arguments.To``) take what they need from these two: the job
spec (``job_spec.build_spec``), the runtime's call (``job_spec.runtime_call``), the wait
(``WatchOptions``, made here) and the backend's settings (``job_settings``).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.arguments import positive_seconds
from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.manifest import dynamic_slicing
from airflow_provider_jax.manifest.accelerators import Accelerator, parse_gpu, parse_tpu
from airflow_provider_jax.manifest.capacity import queue_timeout_seconds
from airflow_provider_jax.manifest.capacity_choices import CapacityChoices
from airflow_provider_jax.manifest.pathways import Pathways
from airflow_provider_jax.manifest.pod_command import split_pip_packages
from airflow_provider_jax.operators.job_arguments import ARGUMENTS, JobArguments, declared
from airflow_provider_jax.operators.run_diagnostics import Diagnostics
from airflow_provider_jax.reporting.host_logs import STREAM_NONE

TPU, GPU = "tpu", "gpu"  # an operator's platform: JobArguments' ``only``


@dataclass(frozen=True)
class JobPlan:
    """What the arguments come to together.

    :param accelerator: the slice or GPU nodes ``accelerator`` names, parsed by the platform.
    :param pathways: the Pathways controller, or None for one JAX process per host.
    :param initialize_distributed: whether the runtime joins ``jax.distributed`` first.
    :param pip_packages: what each process installs (never JAX, which is the image's).
    :param capacity: the capacity choices, in order.
    :param elastic: an elastic job's size policy (``min_slices``), or None.
    :param deferrable: whether the task waits in the triggerer.
    :param watch: how the job is waited on, carried whole to the backend and the trigger.
    :param diagnostics: ``profile_steps`` and ``debug_dump``.
    """

    accelerator: Accelerator
    pathways: Pathways | None
    initialize_distributed: bool
    pip_packages: tuple[str, ...]
    capacity: CapacityChoices
    elastic: ElasticSlices | None
    deferrable: bool
    watch: WatchOptions
    diagnostics: Diagnostics


def plan_job(
    a: JobArguments,
    *,
    platform: str,
    task_id: str,
    ships_source: bool,
    execution_timeout: datetime.timedelta | None,
    remote: bool,
    default_deferrable: bool,
    log: Any,
) -> JobPlan:
    """The plan of ``a`` (checked already) for an operator of ``platform``, or a ValueError
    that names the task and the arguments that can't go together."""
    accelerator = parse_accelerator(a, platform)
    _refuse_unmet(a, task_id, ships_source)
    pathways = Pathways.of(a.pathways)
    if pathways is not None and a.initialize_distributed:
        raise ValueError(
            "initialize_distributed=True does not go with pathways=: under Pathways one "
            "process drives every chip and joins no jax.distributed. Leave it unset."
        )
    initialize = pathways is None if a.initialize_distributed is None else a.initialize_distributed
    kept, dropped = split_pip_packages(list(a.pip_packages))
    if dropped:
        log.warning(
            "%s: not installing %s at process start; the image's accelerator-matched JAX is "
            "used instead.",
            task_id,
            dropped,
        )
    queue_timeout = queue_timeout_seconds(a.queue_timeout, a.queue_timeout_until, a.queue_name)
    capacity = CapacityChoices.parse(
        a.capacity,
        reservation_project=a.reservation_project,
        capacity_wait=a.capacity_wait,
        compute_class=a.compute_class,
        queue_name=a.queue_name,
    )
    timeout = execution_timeout.total_seconds() if execution_timeout is not None else None
    capacity.check_waits(queue_timeout, timeout)
    elastic = ElasticSlices.of(
        a.num_slices,
        a.min_slices,
        a.shrink_after,
        output_dir=a.output_dir,
        pathways=pathways,
        max_restarts=a.max_restarts,
        execution_timeout=execution_timeout,
        multi_pool_slices=accelerator.dynamic_slicing and dynamic_slicing.cubes(accelerator) > 1,
    )
    diagnostics = Diagnostics(a.profile_steps, a.debug_dump)
    diagnostics.check_place(task_id, a.output_dir, remote)
    warn_after = a.checkpoint_warn_after
    watch = WatchOptions.of_task(  # the WATCH route's one reader
        task_id,
        poll_interval=a.poll_interval,
        queue_timeout=queue_timeout,
        queue_until=a.queue_timeout_until,
        stream_logs=a.stream_logs,
        checkpoint_warn_after=(
            positive_seconds("checkpoint_warn_after", warn_after, timedelta_ok=True)
            if warn_after is not None
            else None
        ),
        hosts=accelerator.hosts * a.num_slices,
        checkpoints_expected=a.checkpoint_asset is not None or a.local_checkpoint_size is not None,
    )
    return JobPlan(
        accelerator=accelerator,
        pathways=pathways,
        initialize_distributed=initialize,
        pip_packages=tuple(kept),
        capacity=capacity,
        elastic=elastic,
        deferrable=default_deferrable if a.deferrable is None else a.deferrable,
        watch=watch,
        diagnostics=diagnostics,
    )


def parse_accelerator(a: JobArguments, platform: str) -> Accelerator:
    """``accelerator`` as ``platform``'s operator parses it; another platform's arguments,
    given, are refused naming them."""
    others = [
        f.name
        for f in ARGUMENTS
        if declared(f).only not in (None, platform) and getattr(a, f.name) != f.default
    ]
    if platform == GPU:  # a GPU job is one "slice" of num_nodes
        given = (a.num_slices != 1, a.min_slices is not None, a.shrink_after is not None)
        sliced = ("num_slices", "min_slices", "shrink_after")
        others = [name for name, on in zip(sliced, given, strict=True) if on] + others
    if others:
        what = "slices" if platform == GPU else "GPU nodes"
        use = "num_nodes" if platform == GPU else "num_slices"
        operator = "JaxGpuJobOperator" if platform == GPU else "JaxTpuSliceOperator"
        raise ValueError(f"{operator} has no {what} ({', '.join(others)}); use {use}.")
    if platform == TPU:
        return parse_tpu(
            a.accelerator, chips_per_host=a.chips_per_host, dynamic_slicing=a.dynamic_slicing
        )
    return parse_gpu(a.accelerator, gpus_per_node=a.gpus_per_node, num_nodes=a.num_nodes or 1)


def _refuse_unmet(a: JobArguments, task_id: str, ships_source: bool) -> None:
    """The rules between the program's arguments, each naming the arguments that meet."""
    command = a.command is not None
    rules = [
        (
            not ships_source and command == (a.entrypoint is not None),
            "give exactly one of command or entrypoint.",
        ),
        (command and bool(a.pip_packages), "pip_packages needs entrypoint, not command."),
        (
            command and a.argv is not None,
            "argv is sys.argv for an entrypoint or a decorated function; a command= is its "
            "own argv.",
        ),
        (
            not command and a.require_distributed,
            "require_distributed checks a command= program; with an entrypoint or a decorated "
            "function the runtime joins jax.distributed itself.",
        ),
        (
            a.require_distributed and bool(a.pathways),
            "require_distributed does not go with pathways=: under Pathways one process "
            "drives every chip and joins no jax.distributed.",
        ),
        (
            command and bool(a.initialize_distributed),
            "initialize_distributed=True does nothing for a command=, which joins "
            "jax.distributed itself (a bare jax.distributed.initialize() works); leave it "
            "unset, or use require_distributed=True to check it joined.",
        ),
        (
            bool(a.deadline) and a.stream_logs == STREAM_NONE,
            "deadline= is held against the ETA of the leader's reports, which "
            "stream_logs='none' does not read; use stream_logs='leader' or 'all'.",
        ),
        (
            bool(a.deadline) and command,
            "deadline= is held against the ETA of the leader's runtime.report() calls, which "
            "a command= program can't make (it gets the JAX environment, not the runtime): "
            "use an entrypoint, or the DAG's deadline=.",
        ),
    ]
    for unmet, why in rules:
        if unmet:
            raise ValueError(f"{task_id}: {why}")
