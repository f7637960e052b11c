"""Disruptions restart the slice, bugs do not, and the task log says which, where and why.
The emulator applies the manifest's pod failure policy and JobSet failure policy through the
same ``failure_policy`` functions the local backend uses."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

from airflow_provider_jax.manifest.failure_policy import (
    BACKOFF_LIMIT_EXCEEDED,
    POD_FAILURE_POLICY,
    job_failure_reason,
    on_failure,
    pod_failure_policy,
)
from airflow_provider_jax.runtime.messages import report_line, resumed_line
from harness.jobsets import manifest, succeed
from harness.k8s_emulator import PodRun, PodScript
from tests.support.trigger_runs import assert_restart_logged, events, submit


def test_the_rules_class_failures_as_the_job_controller_would():
    policy = pod_failure_policy("jax", extra_codes=[3])
    assert job_failure_reason(policy, 1) == POD_FAILURE_POLICY  # a bug
    assert job_failure_reason(policy, 3) == BACKOFF_LIMIT_EXCEEDED  # the user's restart code
    for code in (42, 124, 137, 143):
        assert job_failure_reason(policy, code) == BACKOFF_LIMIT_EXCEEDED
    # A disrupted pod counts as a disruption whatever it exits with: the rule order matters.
    assert job_failure_reason(policy, 1, {"DisruptionTarget"}) == BACKOFF_LIMIT_EXCEEDED
    assert on_failure(manifest(), 1)[1]["action"] == "FailJobSet"
    assert on_failure(manifest(), 137)[1]["action"] == "RestartJobSet"


async def test_an_evicted_pod_restarts_the_slice_and_the_task_succeeds(k8s, capsys):
    """A pod gets DisruptionTarget mid-run (preempted by the scheduler) and is stopped: the
    JobSet restarts every Job once, the trigger logs why, and the job then succeeds."""
    done = succeed({"ok": True})

    def script(pod: PodRun) -> PodScript:
        if pod.attempt == 0:
            steps = [report_line({"step": i}) for i in range(1, 6)]
            return PodScript(logs=[f"training on {pod.plan.tag}", *steps], duration=math.inf)
        finished = done(pod)
        return replace(finished, logs=[resumed_line(3), *finished.logs])

    k8s.script(script)
    trigger = submit(k8s, max_restarts=3)
    waiting = asyncio.create_task(events(trigger))

    def reported() -> bool:  # the trigger has streamed the leader's steps of attempt 0
        clock = trigger.clock.clock
        return bool(clock and 0 in clock.attempts and clock.attempts[0].marks)

    await asyncio.to_thread(k8s.wait_for, reported, 10, "the leader's first steps")
    victim = await asyncio.to_thread(
        k8s.wait_for,
        lambda: next((p for p in k8s.controller.pods.values() if p.host_index == 1), None),
        10,
        "host 1 to run",
    )
    await asyncio.to_thread(k8s.disrupt, victim.name)
    (event,) = await asyncio.wait_for(waiting, 20)
    assert event["status"] == "success"
    assert event["jobset"]["restarts"] == 1
    assert len(k8s.submitted) == 1  # one JobSet: the cluster restarted it, not Airflow
    assert_restart_logged(
        capsys.readouterr().out,
        "1/3",
        r"PreemptionByScheduler, exited with code 143 \(killed by SIGTERM\)",
    )
    (line,) = event["restarts"]  # the same line, carried to the worker
    assert_restart_logged(line, "1/3", "PreemptionByScheduler")
    # The ledger, timed from the JobSet's changes and the leader's log stamps; the restart's
    # class is "unknown" when its cause was not visible (see assert_restart_logged).
    ledger = event["goodput"]
    assert (ledger["resumed_from"], ledger["chips"]) == (3, 8)
    assert ledger["restarts"] in ({"disruption": 1}, {"unknown": 1})
    parts = sum(ledger[k] for k in ("queued_s", "startup_s", "productive_s", "lost_s"))
    assert ledger["lost_s"] > 0 and parts <= ledger["wall_s"] + 0.05
