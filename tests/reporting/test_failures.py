"""Culprit ranking when a host dies without a word: JAX's coordination service aborts the
survivors (SIGABRT) in the same second, and the killed host must still come first."""

from __future__ import annotations

from airflow_provider_jax.reporting.failures import ProcessFailure, culprits_first
from airflow_provider_jax.runtime.exits import LOST_PEER

# What a survivor's log ends with on the real control plane (tests/real_cluster/test_restarts.py).
ABORTED = (
    "E1125 19:31:59 coordination_service_agent.cc] Use error polling to propagate the following "
    "error to all tasks: INTERNAL: Shutdown barrier has failed.\n"
    "    @     0x7fb83bd040ee  xla::CoordinationServiceAgent::SetError()\n"
)


def test_a_survivor_aborted_by_jax_is_a_lost_peer_and_the_killed_host_the_culprit():
    killed = ProcessFailure.from_exit("[0/1]", None, 137)
    aborted = ProcessFailure.from_exit("[0/0]", ABORTED, 134)  # FallbackToLogsOnError's tail
    assert aborted.kind == LOST_PEER
    assert [f.tag for f in culprits_first([aborted, killed])] == ["[0/1]", "[0/0]"]


def test_the_log_tail_alone_tells_it_too():
    aborted = ProcessFailure.from_exit("[0/0]", None, -6, log_tail=ABORTED)  # local: -SIGABRT
    assert aborted.kind == LOST_PEER


def test_a_plain_crash_is_not_a_lost_peer():
    crashed = ProcessFailure.from_exit("[0/0]", "Segmentation fault", 139)
    assert crashed.kind != LOST_PEER


def test_a_result_json_cannot_carry_fails_without_a_retry():
    """The runtime reports a result error; the task's error is one Airflow does not retry."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_jax.exceptions import JaxCodeError, JaxJobFailed, JaxResultError
    from airflow_provider_jax.runtime.messages import failure_message

    message = failure_message("ResultNotReturnable: NaN", "Traceback ...", "result error")
    failure = ProcessFailure.from_exit("[0/0]", message, 1)
    assert failure.kind == "result error"
    error = JaxJobFailed.of("JobSet default/x failed", [failure])
    assert isinstance(error, JaxResultError)
    assert isinstance(error, JaxCodeError) and isinstance(error, AirflowFailException)


def test_a_host_sigtermed_in_a_restart_that_reported_it_does_not_outrank_an_oom_kill():
    """A JobSet restart sends SIGTERM to every other pod: one whose ``on_preemption`` ran
    reports a disruption and exits 143. The host the kernel killed (OOM: 137, no word) is
    the cause; where Kubernetes marked the pod DisruptionTarget, the report comes first."""
    from dataclasses import replace

    from airflow_provider_jax.runtime.exits import DISRUPTION
    from airflow_provider_jax.runtime.messages import failure_message

    said = failure_message("Preempted: SIGTERM, on_preemption ran at step 7", "", DISRUPTION)
    stopped = ProcessFailure.from_exit("[0/0]", said, 143)
    oom_killed = ProcessFailure.from_exit("[0/1]", None, 137)
    assert stopped.reported and stopped.kind == DISRUPTION
    assert [f.tag for f in culprits_first([stopped, oom_killed])] == ["[0/1]", "[0/0]"]
    preempted = replace(stopped, disrupted=True)
    assert [f.tag for f in culprits_first([oom_killed, preempted])] == ["[0/0]", "[0/1]"]
