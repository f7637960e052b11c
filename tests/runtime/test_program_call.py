"""Programs written for absl and argparse, called as their own ``__main__`` would call them
(``runtime/program_call.py``): real multi-process JAX on the local backend."""

from __future__ import annotations

from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.local_runs import run_operator

HOSTS = 2  # tpu-v5litepod-8


def entrypoint_job(entrypoint: str, **kwargs) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id="train", name="job", accelerator="tpu-v5litepod-8", backend="local",
        entrypoint=f"tests.fixtures.programs.{entrypoint}", **kwargs,
    )  # fmt: skip


def test_an_absl_main_gets_its_flags_its_argv_and_its_info_logs(caplog):
    argv = ["--steps=3", "--workdir=/tmp/w", "extra"]
    outcome = run_operator(entrypoint_job("absl_main:main", argv=argv), timeout_s=120)
    assert outcome.result == {
        "steps": 3, "workdir": "/tmp/w", "left": ["extra"], "processes": HOSTS,
    }  # fmt: skip
    # As under app.run, INFO shows without --verbosity=0.
    assert any("training 3 steps in /tmp/w" in m for m in caplog.messages), caplog.messages


def test_a_flax_style_main_runs_as_app_run_runs_it(caplog):
    """``def main(_)`` gets argv by position; JAX's flags are absl flags, as the example's
    ``__main__`` block makes them with ``jax.config.config_with_absl()``."""
    argv = ["--workdir=/tmp/flax", "--num_train_steps=5", "--jax_enable_x64"]
    outcome = run_operator(entrypoint_job("flax_style_main:main", argv=argv), timeout_s=120)
    assert outcome.result == {"workdir": "/tmp/flax", "steps": 5, "x64": True, "processes": HOSTS}
    assert any(f"JAX process: 0 / {HOSTS}" in m for m in caplog.messages), caplog.messages


def test_a_flax_style_main_runs_without_argv():
    outcome = run_operator(entrypoint_job("flax_style_main:main"), timeout_s=120)
    assert outcome.result == {"workdir": None, "steps": 2, "x64": False, "processes": HOSTS}


def test_a_bad_absl_flag_fails_with_absl_usage_error():
    import pytest

    from airflow_provider_jax.exceptions import JaxJobFailed

    with pytest.raises(JaxJobFailed) as failed:
        run_operator(entrypoint_job("flax_style_main:main", argv=["--nope=1"]), timeout_s=120)
    assert "Unknown command line flag 'nope'" in str(failed.value)


def test_an_argparse_main_reads_argv():
    outcome = run_operator(
        entrypoint_job("argparse_main:main", argv=["--steps", "4"]), timeout_s=120
    )
    assert outcome.result == {"steps": 4}
