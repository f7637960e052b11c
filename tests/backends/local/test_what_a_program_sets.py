"""What a ``command=`` program sees of its own choices, on the local backend as in a pod:
``$(JAX_PROCESS_ID)`` and ``$(NODE_RANK)`` in its arguments expand (the prelude computes them,
so Kubernetes alone would leave them as written), its own ``XLA_FLAGS`` leave the host's chips
alone, and a relative script path means the DAG file's folder, wherever the worker runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.jobset_schema import REPO
from tests.support.local_runs import run_operator

PROGRAM = Path("tests/fixtures/programs/sets_its_own_xla_flags.py")  # relative to the DAG's
HOSTS, CHIPS = 2, 4  # tpu-v5litepod-8


def test_a_command_sees_its_process_id_its_chips_and_the_dags_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the worker's own working directory plays no part
    op = JaxTpuSliceOperator(
        task_id="train",
        name="job",
        accelerator="tpu-v5litepod-8",
        backend="local",
        command=[
            sys.executable,
            str(PROGRAM),
            str(tmp_path),
            "--rank=$(JAX_PROCESS_ID)",
            "--node=$(NODE_RANK)-of-$(JAX_NUM_PROCESSES)",
        ],
    )
    run_operator(op, timeout_s=120)
    for index in range(HOSTS):
        seen = json.loads((tmp_path / f"process-{index}.json").read_text())
        assert seen == {
            "argv": [f"--rank={index}", f"--node={index}-of-{HOSTS}"],
            "local_devices": CHIPS,
            "cwd": str(REPO),  # run_operator's DAG folder: the repository
        }
