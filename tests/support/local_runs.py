"""Jobs run by the local backend as the operator runs them: the helpers the local-backend and
runtime drills share."""

from __future__ import annotations

import logging
import time
from typing import Any

from airflow_provider_jax.backends.local.backend import LocalBackend
from airflow_provider_jax.contract import JobSettings, Outcome
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.operators.job_settings import with_checkpoints
from tests.support.jobset_schema import REPO

LOG = logging.getLogger("tests.local")


def operator(program: str, **kwargs: Any) -> JaxTpuSliceOperator:
    """``program`` (a function of ``tests.support.programs``, or ``module:function``) as the
    local backend's operator runs it."""
    kwargs.setdefault("accelerator", "tpu-v5litepod-8")
    kwargs.setdefault("backend", "local")
    return JaxTpuSliceOperator(
        task_id="train",
        name="job",
        image="ignored-locally",
        entrypoint=program if ":" in program else f"tests.support.programs:{program}",
        **kwargs,
    )


def manifest(program: str, **kwargs: Any) -> dict[str, Any]:
    return build_jobset(operator(program, **kwargs).build_spec(name="job"))


def run(program: str, timeout_s: float | None = None, **kwargs: Any) -> tuple[Any, Any]:
    """(result, last report) of ``program`` run by the local backend, as the operator does."""
    outcome = run_outcome(program, timeout_s, **kwargs)
    return outcome.result, outcome.report


def run_outcome(
    program: str, timeout_s: float | None = None, deadline: float | None = None, **kwargs: Any
) -> Outcome:
    """The whole outcome of ``program`` run by the local backend (ledger included), ending
    ``timeout_s`` from now or at ``deadline`` (epoch seconds)."""
    if timeout_s is not None:
        deadline = time.time() + timeout_s
    return run_operator(operator(program, **kwargs), deadline, timeout_s)


def run_operator(op: Any, deadline: float | None = None, timeout_s: float | None = None) -> Outcome:
    """The outcome of operator ``op`` (an entrypoint's or a decorated function's) run by the
    local backend, as its ``execute()`` runs it."""
    backend = LocalBackend(
        JobSettings(
            name="job",
            namespace="default",
            log=LOG,
            deadline=deadline,
            execution_timeout_s=timeout_s,
            output_dir=op.output_dir,
            pythonpath=(str(REPO),),
            watch=with_checkpoints(op.plan.watch, op.output_dir),  # as job_settings() does
        )
    )
    return backend.wait(backend.start(build_jobset(op.build_spec(name="job"))))
