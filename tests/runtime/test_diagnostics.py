"""profile_steps, runtime.profile() and debug_dump, in real JAX processes run by the local
backend as the operator runs them: the files they leave, where, and what a failure adds."""

from __future__ import annotations

import pytest

from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.runtime.debug_dump import (
    LOG_TAIL_FILE,
    STACKS_FILE,
    TRACEBACK_FILE,
    XLA_FOLDER,
)
from tests.support.local_runs import operator, run, run_operator

PROGRAMS = "tests.support.inspection_programs"
HOSTS = "tpu-v5litepod-16"  # four hosts, locally four processes on the CPU


def traces(folder):
    return sorted(folder.glob("plugins/profile/*/*.xplane.pb"))


def test_profile_steps_traces_every_host_into_its_own_folder(tmp_path):
    result, report = run(
        f"{PROGRAMS}:profiled_steps",
        accelerator=HOSTS,
        output_dir=str(tmp_path),
        profile_steps=(3, 2),
        entrypoint_kwargs={"steps": 8},
        timeout_s=120,
    )
    assert result == 8 and report["step"] == 7
    try_folder = tmp_path / "profiles" / "try-0"
    assert sorted(p.name for p in try_folder.iterdir()) == [f"host-{i}" for i in range(4)]
    for host in try_folder.iterdir():
        assert len(traces(host)) == 1, list(host.rglob("*"))


@pytest.mark.parametrize(
    ("mode", "every", "warning"),
    [
        (
            "own_trace",
            1,
            "(the program's own trace runs, and is kept); the job goes on",
        ),
        (
            "own_trace_inside",
            1,
            "was not started: profile_steps's trace was running on this host and is kept",
        ),
        ("block", 1, "profile_steps: a profile is already being captured on this host"),
        ("text_step", 1, "report(step='abc'): profile_steps counts integer steps"),
        ("sparse", 10, "profile_steps=(5, 3) was missed: the reports went from step 0 to step 10"),
    ],
)
def test_a_profile_that_cannot_run_warns_and_the_job_goes_on(
    tmp_path, caplog, mode, every, warning
):
    result, _ = run(
        f"{PROGRAMS}:profiled_against_itself",
        output_dir=str(tmp_path),
        profile_steps=(5, 3),
        entrypoint_kwargs={"mode": mode, "every": every},
        timeout_s=120,
    )
    assert result == 12
    said = [m for m in caplog.messages if "airflow-jax: warning:" in m]
    assert any(warning in m for m in said), caplog.messages[-30:]
    if mode == "sparse":
        assert not any("profile written" in m for m in caplog.messages)
    if mode == "own_trace_inside":  # the window's trace, kept, is there
        assert len(traces(tmp_path / "profiles" / "try-0" / "host-0")) == 1


def test_a_window_past_the_last_report_says_it_was_never_reached(tmp_path, caplog):
    result, _ = run(
        f"{PROGRAMS}:profiled_steps",
        output_dir=str(tmp_path),
        profile_steps=(50, 2),
        entrypoint_kwargs={"steps": 4},
        timeout_s=120,
    )
    assert result == 4
    assert any("profile_steps=(50, 2) was never reached" in m for m in caplog.messages)


def test_runtime_profile_traces_a_block_without_reports(tmp_path):
    result, _ = run(f"{PROGRAMS}:profiled_block", output_dir=str(tmp_path), timeout_s=120)
    assert result == "profiled"
    assert len(traces(tmp_path / "profiles" / "try-0" / "host-0")) == 1


def test_without_output_dir_a_local_run_profiles_into_its_own_temp_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    run(f"{PROGRAMS}:profiled_steps", profile_steps=(0, 1), timeout_s=120)
    host = tmp_path / "airflow-jax-diagnostics" / "job" / "profiles" / "try-0" / "host-0"
    assert len(traces(host)) == 1


def test_a_failed_host_leaves_its_stacks_log_tail_and_hlo(tmp_path):
    op = operator(
        f"{PROGRAMS}:fails_after_compiling",
        accelerator=HOSTS,
        output_dir=str(tmp_path),
        debug_dump=True,
        max_restarts=0,
    )
    with pytest.raises(JaxJobFailed, match="bad batch") as failed:
        run_operator(op, timeout_s=120)
    host = tmp_path / "debug" / "try-0" / "host-1"
    # The task's error names the failed host's folder, under that host's traceback.
    assert f"its debug dump (stacks, traceback, log tail, HLO): {host}" in str(failed.value)
    assert "RuntimeError: bad batch on process 1" in (host / TRACEBACK_FILE).read_text()
    assert "fails_after_compiling" in (host / TRACEBACK_FILE).read_text()
    assert "(most recent call first)" in (host / STACKS_FILE).read_text()  # every thread's
    tail = (host / LOG_TAIL_FILE).read_text()
    assert "a line from Python before the failure" in tail
    assert "a line written to fd 2 as XLA's C++ logs are" in tail
    assert list((host / XLA_FOLDER).glob("*.txt")), list(host.rglob("*"))


def test_a_success_sends_its_hlo_and_log_tail_but_no_stacks(tmp_path):
    run(f"{PROGRAMS}:profiled_steps", output_dir=str(tmp_path), debug_dump=True, timeout_s=120)
    host = tmp_path / "debug" / "try-0" / "host-0"
    assert not (host / STACKS_FILE).exists()
    assert '"step":7' in (host / LOG_TAIL_FILE).read_text()
    assert list((host / XLA_FOLDER).glob("*.txt"))


def test_a_hung_host_dumps_and_the_restart_keeps_its_own_folder(tmp_path):
    """Host 1 hangs on the first attempt: its dump holds the hung frame; the restart that
    finishes sends its own dump beside it, in restart-1, overwriting nothing."""
    result, _ = run(
        "hang_once",
        output_dir=str(tmp_path),
        debug_dump=True,
        progress_timeout=2,
        max_restarts=1,
        initialize_distributed=False,
    )
    assert result["restart_attempt"] == 1
    host = tmp_path / "debug" / "try-0" / "host-1"
    assert "in sleep_forever" in (host / STACKS_FILE).read_text()
    assert "no progress report for" in (host / LOG_TAIL_FILE).read_text()
    assert not (host / "restart-1" / STACKS_FILE).exists()
    assert '"step":19' in (host / "restart-1" / LOG_TAIL_FILE).read_text()


def test_profiles_go_to_gcs_from_every_host(gcs_bucket):
    from airflow_provider_jax.runtime.stores import gcs

    output_dir = f"gs://{gcs_bucket}/runs/profiled"
    run(
        f"{PROGRAMS}:profiled_steps", accelerator=HOSTS, output_dir=output_dir, profile_steps=(2, 3)
    )
    names = gcs.list_objects(gcs_bucket, "runs/profiled/profiles/try-0/")
    traces = [o["name"] for o in names if o["name"].endswith(".xplane.pb")]
    assert len(traces) == 4, names
    assert {t.split("/")[4] for t in traces} == {f"host-{i}" for i in range(4)}
    assert all("/plugins/profile/" in t for t in traces)
