"""Elastic slices (``min_slices``), checked where they are decided: the arguments at parse,
and real local jobs through ``airflow dags test`` whose second slice loses its capacity
midway (``[jax] local_capacity_file``), with real JAX and Orbax restores onto a mesh of
another size."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from tests.support.airflow_home import AIRFLOW, AirflowHome
from tests.support.dag_runs import task_states
from tests.support.elastic_reference import reference_w
from tests.support.waiting import eventually
from tests.support.xcoms import xcoms

DAGS = Path(__file__).parent / "dags"
BASE = {
    "task_id": "t",
    "accelerator": "tpu-v5litepod-8",
    "num_slices": 2,
    "backend": "local",
    "entrypoint": "m:f",
    "output_dir": "/tmp/out",
}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"min_slices": 2}, r"min_slices must be below num_slices \(2\), got 2"),
        ({"min_slices": 3}, r"min_slices must be below num_slices"),
        ({"min_slices": 0}, r"min_slices must be an integer >= 1, got 0"),
        ({"min_slices": -1}, r"min_slices must be an integer >= 1"),
        ({"min_slices": True}, r"min_slices must be an integer >= 1, got True"),
        ({"min_slices": 1.0}, r"min_slices must be an integer >= 1, got 1.0"),
        ({"min_slices": "1"}, r"min_slices must be an integer >= 1, got '1'"),
        ({"min_slices": "{{ params.n }}"}, r"min_slices is not a templated field"),
        ({"min_slices": 1, "num_slices": 1}, r"min_slices needs a multislice job"),
        ({"min_slices": 1, "output_dir": None}, r"min_slices needs output_dir"),
        ({"min_slices": 1, "pathways": True}, r"min_slices does not go with pathways="),
        ({"shrink_after": 60}, r"shrink_after .* needs min_slices= too"),
        ({"min_slices": 1, "shrink_after": 0}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": -5}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": float("nan")}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": float("inf")}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": True}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": "60"}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": "60\n"}, r"shrink_after must be"),
        ({"min_slices": 1, "shrink_after": timedelta(0)}, r"shrink_after must be"),
        ({"min_slices": 1, "env": {"AIRFLOW_JAX_RESIZED": "grew"}}, r"the provider's own"),
    ],
)
def test_bad_elastic_arguments_are_refused_at_parse_by_name(kwargs, error):
    with pytest.raises((ValueError, TypeError), match=error):
        JaxTpuSliceOperator(**{**BASE, **kwargs})


def test_a_gpu_job_has_no_slices_to_lose():
    with pytest.raises(ValueError, match=r"has no slices \(min_slices\)"):
        JaxGpuJobOperator(task_id="g", accelerator="h100", num_nodes=2, min_slices=1,
                          backend="local", entrypoint="m:f")  # fmt: skip


def test_an_elastic_job_renders_at_full_size_first():
    op = JaxTpuSliceOperator(**BASE, min_slices=1, shrink_after=30)
    assert (op.plan.elastic.full, op.plan.elastic.minimum, op.plan.elastic.shrink_after) == (
        2,
        1,
        30.0,
    )
    assert op.dry_run()["spec"]["replicatedJobs"][0]["replicas"] == 2


def xcom_value(home: AirflowHome, dag_id: str, task_id: str, key: str = "return_value") -> Any:
    (value,) = xcoms(home.path / "airflow.db", dag_id, task_id, key).values()
    return value


class Drill:
    """``airflow dags test`` of a 2-slice job (``dags/elastic.py``) whose training waits for
    the drill's moves at its marks (``tests.support.programs.elastic_train``)."""

    def __init__(self, home: AirflowHome, out: Path, dag_id: str, task_id: str) -> None:
        self.capacity, self.out = out / "capacity.json", out / task_id
        self.set_capacity(2)
        self.lines: list[str] = []
        env = home.env(DAGS, JAX_TEST_OUT=str(out),
                       AIRFLOW__JAX__LOCAL_CAPACITY_FILE=str(self.capacity))  # fmt: skip
        self.proc = subprocess.Popen(
            [*AIRFLOW, "dags", "test", dag_id, "2024-01-01"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def set_capacity(self, slices: int) -> None:
        staged = self.capacity.with_suffix(".new")
        staged.write_text(json.dumps({"slices": slices}))
        os.replace(staged, self.capacity)  # the backend reads it whole or not at all

    def reached(self, what: str, check: Callable[[], Any]) -> None:
        """Wait for ``check`` while the job runs; a job that ended first fails with its log."""
        try:
            eventually(what, lambda: check() or self.proc.poll() is not None, timeout=240)
        except AssertionError:
            stop(self.proc)
            raise AssertionError(f"not within 240 s: {what}:\n{self.log[-8000:]}") from None
        assert self.proc.poll() is None, f"the job ended before {what}:\n{self.log[-8000:]}"

    def marked(self, name: str) -> None:
        self.reached(name, (self.out / name).exists)

    def finish(self) -> str:
        try:
            self.proc.wait(timeout=240)
        finally:
            stop(self.proc)
            self.reader.join()
        return self.log


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, as a worker is stopped: the task's on_kill stops its local processes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_a_job_with_min_slices_shrinks_when_a_slice_is_lost_and_grows_back(airflow_home, tmp_path):
    """Slice 1's capacity goes after step 12: the job restarts, slice 1's pods wait, and
    after shrink_after it goes on with 1 slice from its checkpoint; capacity returns once it
    trains there, and it grows back at its next checkpoint. The result is the one a job that
    never lost a slice computes."""
    drill = Drill(airflow_home, tmp_path, "jax_elastic", "elastic")
    drill.marked("drill-lose")
    drill.set_capacity(1)
    drill.marked("drill-return")
    drill.set_capacity(2)
    (drill.out / "drill-returned").touch()
    log = drill.finish()
    assert task_states(airflow_home, "jax_elastic")["elastic"] == ("success", 1), log[-8000:]
    shrunk = re.search(r"shrinking from 2 to 1 of 2 slices \(min_slices=1\), from checkpoint "
                       r"step (\d+)", log)  # fmt: skip
    grew = re.search(r"growing from 1 to 2 slices", log)
    assert shrunk and grew, log[-8000:]
    assert shrunk.start() < grew.start()
    result = xcom_value(airflow_home, "jax_elastic", "elastic")
    assert (result["slices"], result["start_reason"], result["devices"]) == (2, "grew", 16)
    assert result["resumed_from"] >= 25  # from a checkpoint it took on one slice
    # Each JobSet started from the newest checkpoint: no step lost beyond the interval.
    assert int(shrunk[1]) >= 10
    np.testing.assert_allclose(result["w_sum"], reference_w(60).sum(), atol=1e-3)
    goodput = xcom_value(airflow_home, "jax_elastic", "elastic", key="goodput")
    assert set(goodput["by_slices"]) == {"1", "2"} and goodput["full_slices"] == 2
    assert goodput["reduced_s"] > 0  # half of the work on one slice counts as productive
    assert re.search(r"slices: 2/2 for [\d.]+s, 1/2 for [\d.]+s", log)


@pytest.mark.slow
def test_without_min_slices_the_job_waits_for_the_lost_slice(airflow_home, tmp_path):
    """The same loss, without min_slices: the restarted job's slice-1 pods wait for capacity
    and slice 0 waits for them, as on a cluster today; when capacity returns, the job goes on
    at its size from its checkpoint."""
    drill = Drill(airflow_home, tmp_path, "jax_fixed_size", "fixed")
    drill.marked("drill-lose")
    drill.set_capacity(1)
    drill.reached("slice 1's pods waiting", lambda: "slice(s) [1] have no capacity" in drill.log)
    drill.set_capacity(2)
    log = drill.finish()
    assert task_states(airflow_home, "jax_fixed_size")["fixed"] == ("success", 1), log[-8000:]
    assert "shrinking" not in log and "growing" not in log
    result = xcom_value(airflow_home, "jax_fixed_size", "fixed")
    assert (result["slices"], result["start_reason"]) == (2, "restart")
    assert result["resumed_from"] >= 10
    np.testing.assert_allclose(result["w_sum"], reference_w(60).sum(), atol=1e-3)
