"""A failure's class travels in its exit code and termination message: a bug exits 1, a
process that only lost a peer exits 42 (restart the slice), so one preempted host never fails
the JobSet through its survivors' errors."""

from __future__ import annotations

import json
import time

import pytest

from airflow_provider_jax.backends.local.localize import free_ports, localize
from airflow_provider_jax.backends.local.pods import plan_pods
from airflow_provider_jax.backends.local.processes import PodProcess
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.reporting.failures import ProcessFailure
from airflow_provider_jax.runtime.exits import (
    CODE_ERROR,
    DISRUPTION,
    EXIT_DISRUPTED,
    HUNG,
    exit_class,
    is_lost_peer,
)
from tests.support.jobset_schema import REPO


class JaxRuntimeError(RuntimeError):
    """Named as jax.errors.JaxRuntimeError is: classification goes by the class name."""


@pytest.mark.parametrize(
    ("err", "lost"),
    [
        (JaxRuntimeError("Gloo AllGather failed: Connection reset by peer"), True),
        (JaxRuntimeError("UNAVAILABLE: The coordination service has stopped"), True),
        (JaxRuntimeError("INVALID_ARGUMENT: shapes (3,) and (4,) differ"), False),
        (RuntimeError("Connection reset by peer"), False),  # not JAX's: the user's own call
        (ValueError("loss is NaN"), False),
    ],
)
def test_only_jax_errors_about_a_peer_are_a_lost_peer(err, lost):
    assert is_lost_peer(err) is lost


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (1, CODE_ERROR),
        (2, CODE_ERROR),
        (42, DISRUPTION),
        (124, HUNG),
        (137, DISRUPTION),
        (143, DISRUPTION),
        (-9, DISRUPTION),
        (255, DISRUPTION),
        (126, CODE_ERROR),  # not executable
        (127, CODE_ERROR),  # not found: a typo in python= or command=
        (128, CODE_ERROR),  # kubelet's StartError: containerd could not start the command
        (129, DISRUPTION),  # SIGHUP, the first death by signal
    ],
)
def test_exit_codes_map_to_classes_as_the_pod_failure_policy_does(code, kind):
    assert exit_class(code) == kind


@pytest.mark.parametrize(
    ("code", "message", "log", "named"),
    [
        (
            128,
            'failed to create containerd task: ... exec: "pythn": executable file not found in $PATH',
            "",
            'exec: "pythn": executable file not found',
        ),
        (127, None, "cannot run 'pythn': No such file or directory\n", "cannot run 'pythn'"),
    ],
)
def test_a_command_that_never_started_is_a_code_error_that_names_it(code, message, log, named):
    failure = ProcessFailure.from_exit("[0/0]", message, code, log)
    assert failure.kind == CODE_ERROR
    assert "the command could not be started" in failure.error
    assert named in failure.error


def test_a_survivor_of_a_killed_peer_exits_as_a_lost_peer_not_a_bug(tmp_path):
    """Real JAX, two processes: process 1 is SIGKILLed mid-collective; process 0, left
    running, fails within seconds with exit 42 and a message classed "lost peer"."""
    op = JaxTpuSliceOperator(
        task_id="t",
        name="lose",
        image="ignored",
        accelerator="tpu-v5litepod-8",
        entrypoint="tests.support.programs:lose_peer_midway",
    )
    local = localize(build_jobset(op.build_spec(name="lose")), *free_ports(2))
    plans = plan_pods(local, restart_attempt=0)
    processes = [PodProcess.start(p, lambda *_: None, [str(REPO)]) for p in plans]
    try:
        assert processes[1].wait(timeout=120) == -9
        killed_at = time.monotonic()
        code = processes[0].wait(timeout=120)
        detected_s = time.monotonic() - killed_at
        message = json.loads(processes[0].termination_message())
    finally:
        for process in processes:
            process.kill()
            process.close()
    assert code == EXIT_DISRUPTED, message
    assert message["class"] == "lost peer"
    assert detected_s < 30
    print(f"lost peer detected {detected_s:.2f}s after the kill: {message['error'][:120]}")
