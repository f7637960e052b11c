"""A DAG the project does not ship: ``tests/compose`` drops it into a running stack's
``dags/``, as a user drops one in, and runs it to its XCom. Two GPU nodes (an xpk device
type, through the decorator, with no image: the local backend needs none), where the
quickstart is a TPU slice through the operator: each process contributes its rank, and the
all-gather returns them all to the leader."""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import dag, task


@dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
def held_out_allgather() -> None:
    @task.jax_gpu(accelerator="h100-80gb-2", num_nodes=2)
    def gather() -> dict[str, Any]:
        import jax
        import numpy as np
        from jax.experimental import multihost_utils

        ranks = multihost_utils.process_allgather(np.int32(jax.process_index()))
        return {
            "ranks": sorted(int(r) for r in ranks),
            "processes": jax.process_count(),
            "devices": jax.device_count(),
        }

    @task
    def report(result: dict[str, Any]) -> None:
        print(f"HELD-OUT RESULT: ranks {result['ranks']} of {result['devices']} devices")

    report(gather())


held_out_allgather()
