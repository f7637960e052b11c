from __future__ import annotations

import numpy as np
import pytest

from airflow_provider_jax import runtime
from airflow_provider_jax.runtime.messages import parse_report


def test_report_prints_a_line_and_keeps_the_last(capsys):
    runtime.report(
        step=np.int32(5), loss=np.float32(0.5), lr=1e-3, phase="warmup", bad=float("nan")
    )
    report = _printed(capsys)
    assert report == {"step": 5, "loss": 0.5, "lr": 1e-3, "phase": "warmup", "bad": "nan"}
    assert runtime._last_report == report
    runtime.report(accuracy=1)
    assert _printed(capsys) == {"accuracy": 1}


def test_report_carries_the_total_from_the_call_or_the_code(capsys, monkeypatch):
    monkeypatch.setattr(runtime, "_total_steps", 100)  # the operator's total_steps
    runtime.report(step=10, loss=0.5)
    assert _printed(capsys) == {"step": 10, "total_steps": 100, "loss": 0.5}
    runtime.report(step=10, total_steps=np.int64(40))
    assert _printed(capsys) == {"step": 10, "total_steps": 40}
    with pytest.raises(TypeError, match="positive int"):
        runtime.report(step=1, total_steps=0)


@pytest.mark.parametrize(
    ("value", "error"),
    [(np.zeros(3), "must be a scalar"), (object(), "must be a number or a string, got object")],
)
def test_report_rejects_what_is_not_a_scalar(value, error):
    with pytest.raises(TypeError, match=error):
        runtime.report(step=1, metric=value)


def test_environment(monkeypatch):
    monkeypatch.delenv("AIRFLOW_JAX_OUTPUT_DIR", raising=False)
    monkeypatch.delenv("JAX_PROCESS_ID", raising=False)
    monkeypatch.delenv("AIRFLOW_JAX_RESTART_ATTEMPT", raising=False)
    assert (runtime.output_dir(), runtime.process_index(), runtime.restart_attempt()) == (
        None,
        0,
        0,
    )
    monkeypatch.setenv("AIRFLOW_JAX_OUTPUT_DIR", "gs://bucket/run")
    monkeypatch.setenv("JAX_PROCESS_ID", "3")
    monkeypatch.setenv("AIRFLOW_JAX_RESTART_ATTEMPT", "2")
    assert (runtime.output_dir(), runtime.process_index(), runtime.restart_attempt()) == (
        "gs://bucket/run",
        3,
        2,
    )


@pytest.mark.parametrize("value", ["s3://bucket/x", "relative/x", "file:///tmp/x", "gs:///x"])
def test_the_runtime_writes_nowhere_but_gcs_or_an_absolute_path(monkeypatch, value):
    """Whatever launched it, the leader never writes ./s3:/bucket/x/result.json."""
    monkeypatch.setenv("AIRFLOW_JAX_OUTPUT_DIR", value)
    with pytest.raises(ValueError, match="output_dir"):
        runtime.output_dir()
    with pytest.raises(ValueError, match="output_dir"):
        runtime.checkpoint_dir()


def test_importing_the_runtime_is_light():
    import subprocess
    import sys

    code = "import sys, airflow_provider_jax.runtime; print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout
    assert "'airflow'" not in loaded and "'jax'" not in loaded and "'urllib.request'" not in loaded


def _printed(capsys: pytest.CaptureFixture[str]) -> dict | None:
    """The report line printed since the last look, once the reporter's thread is done."""
    runtime._reporter.flush()
    return parse_report(capsys.readouterr().out)
