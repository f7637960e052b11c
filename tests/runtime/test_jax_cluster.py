"""Programs written for JAX, run as they are: a bare ``jax.distributed.initialize()`` joins the
job on the local backend, in ``command=`` mode (the launcher's sitecustomize) and in entrypoint
mode (where the runtime joined first); a host that never joins is named in the task log, and
fails the job where ``require_distributed`` asks for it. Real multi-process JAX on the CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.runtime import jax_cluster
from tests.support.local_runs import run_operator

PROGRAMS = Path(__file__).parents[1] / "fixtures" / "programs"
HOSTS, CHIPS = 2, 4  # tpu-v5litepod-8


def command_job(*argv: str, **kwargs) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id="train",
        name="job",
        accelerator="tpu-v5litepod-8",
        backend="local",
        command=[sys.executable, *argv],
        **kwargs,
    )


def seen_by_every_process(out: Path) -> list[dict]:
    return [json.loads((out / f"process-{i}.json").read_text()) for i in range(HOSTS)]


def test_a_bare_initialize_joins_every_process_in_command_mode(tmp_path):
    run_operator(command_job(str(PROGRAMS / "bare_initialize.py"), str(tmp_path)), timeout_s=120)
    for index, seen in enumerate(seen_by_every_process(tmp_path)):
        assert seen == {
            "process_index": index,
            "process_count": HOSTS,
            "device_count": HOSTS * CHIPS,
            "total": CHIPS * 1 + CHIPS * 2,  # every device of process p holds p + 1
        }


@pytest.mark.parametrize("ending", [[], ["--shutdown"]], ids=["jax-exit-handler", "own-shutdown"])
def test_jax_docs_example_joins_and_is_never_told_otherwise(caplog, ending):
    """Run as JAX's docs write it, under require_distributed: it joined, so it is never told it
    didn't, whether JAX's exit handler or the program's own shutdown() closed the client."""
    op = command_job(str(PROGRAMS / "jax_docs_multi_process.py"), *ending, require_distributed=True)
    run_operator(op, timeout_s=120)
    assert not [m for m in caplog.messages if jax_cluster.NOT_JOINED_MARK in m]
    assert any(f"devices: {HOSTS * CHIPS} local: {CHIPS}" in m for m in caplog.messages)


def test_a_host_that_crashed_before_joining_is_told_it_crashed(caplog):
    op = command_job(str(PROGRAMS / "crashes_before_joining.py"), require_distributed=True)
    with pytest.raises(JaxJobFailed) as failed:
        run_operator(op, timeout_s=120)
    assert "KeyError: 'steps'" in str(failed.value)
    assert jax_cluster.NOT_JOINED_MARK not in str(failed.value)
    assert not [m for m in caplog.messages if jax_cluster.NOT_JOINED_MARK in m]


def test_a_second_initialize_after_the_runtimes_is_harmless(tmp_path, caplog):
    op = JaxTpuSliceOperator(
        task_id="train",
        name="job",
        accelerator="tpu-v5litepod-8",
        backend="local",
        entrypoint="tests.fixtures.programs.bare_initialize:entrypoint",
        entrypoint_kwargs={"out_dir": str(tmp_path)},
    )
    outcome = run_operator(op, timeout_s=120)
    assert outcome.result["process_count"] == HOSTS
    assert [s["process_index"] for s in seen_by_every_process(tmp_path)] == [0, 1]
    assert any("this jax.distributed.initialize() call does nothing" in m for m in caplog.messages)


def test_a_host_that_never_joins_is_named_in_the_task_log(caplog):
    """Every host's line, though the task log follows only the leader's output."""
    run_operator(command_job(str(PROGRAMS / "never_joins.py")), timeout_s=120)
    named = sorted(m for m in caplog.messages if jax_cluster.NOT_JOINED_MARK in m)
    assert len(named) == HOSTS, caplog.messages
    for index, message in enumerate(named):
        assert f"process {index} of {HOSTS} imported JAX but never called" in message


def test_require_distributed_fails_a_job_whose_hosts_never_join():
    op = command_job(str(PROGRAMS / "never_joins.py"), require_distributed=True)
    with pytest.raises(JaxJobFailed) as failed:
        run_operator(op, timeout_s=120)
    assert jax_cluster.NOT_JOINED_MARK in str(failed.value)


def test_require_distributed_is_for_command_mode():
    with pytest.raises(ValueError, match="require_distributed checks a command= program"):
        JaxTpuSliceOperator(
            task_id="t", accelerator="tpu-v5litepod-8", backend="local", entrypoint="m:f",
            require_distributed=True,
        )  # fmt: skip


def test_the_site_hook_stands_alone_and_registers_only_where_the_launcher_set_it_up(tmp_path):
    """The launcher writes the module as ``sitecustomize.py``: it must import nothing of the
    provider, and a process without the JobSet's values gets no cluster environment."""
    import subprocess

    (tmp_path / "sitecustomize.py").write_text(Path(jax_cluster.__file__).read_text())
    probe = (
        "import sys, jax._src.clusters as c; "
        "print(any(t.name == 'airflow_jax' for t in c.ClusterEnv._cluster_types), "
        "any(m.startswith('airflow_provider_jax') for m in sys.modules))"
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    alone = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert alone.stdout.split() == ["False", "False"], alone.stderr
    env |= {
        "JAX_COORDINATOR_ADDRESS": "localhost:1",
        "JAX_NUM_PROCESSES": "1",
        "JAX_PROCESS_ID": "0",
    }
    launched = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True
    )
    assert launched.stdout.split() == ["True", "False"], launched.stderr


def test_argv_is_not_for_a_command():
    with pytest.raises(ValueError, match="a command= is its own argv"):
        command_job("x.py", argv=["--steps=1"])
