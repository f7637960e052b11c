"""Pods that no node can hold: the wait fails once the cluster autoscaler says it cannot help,
with the scheduler's reason and the likely fix; a node pool that scales up, or one that is only
full, is waited on. The emulator places pods as kube-scheduler does and records the autoscaler's
events (``harness/k8s_emulator/scheduler.py``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.jobsets import manifest, run_forever, succeed
from harness.k8s_emulator.rbac import docs_role
from harness.k8s_emulator.scheduler import NodePool
from tests.support.trigger_runs import events, submit

TPU = "google.com/tpu"
# What manifest() selects: a 2x4 v5e slice as two 4-chip VMs.
V5E_2X4 = manifest()["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
    "nodeSelector"
]
V6E = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}


async def fails_fast(k8s) -> str:
    started = time.monotonic()
    (event,) = await asyncio.wait_for(events(submit(k8s)), 20)
    assert (event["status"], event["reason"]) == ("failed", "PodsCannotStart")
    assert time.monotonic() - started < 10  # the first check, not a timeout
    return event["message"]


async def test_no_pool_with_the_jobs_labels_fails_naming_them(k8s):
    k8s.nodes(NodePool("v6e", V6E, {TPU: 4}, size=0, max_size=4), autoscaling=True)
    message = await fails_fast(k8s)
    assert "[0/0] cannot be scheduled: 0/0 nodes are available" in message
    assert "didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector" in (
        message
    )
    assert "No node pool carries the labels this job selects (" in message
    assert "cloud.google.com/gke-tpu-accelerator=tpu-v5-lite-podslice" in message


async def test_nodes_with_fewer_chips_than_a_pod_asks_for_fail_naming_the_count(k8s):
    k8s.nodes(NodePool("v5e-1", V5E_2X4, {TPU: 1}, size=2, max_size=4), autoscaling=True)
    message = await fails_fast(k8s)
    assert "0/2 nodes are available: 2 Insufficient google.com/tpu" in message
    assert "Each pod asks for 4 google.com/tpu, more than a node of any pool has" in message


async def test_a_pool_that_scales_up_from_zero_is_waited_for(k8s):
    k8s.script(succeed({"ok": 1}))
    k8s.nodes(NodePool("v5e", V5E_2X4, {TPU: 4}, size=0, max_size=2), autoscaling=True)
    (event,) = await asyncio.wait_for(events(submit(k8s)), 20)
    assert event["status"] == "success"
    pool = k8s.controller.scheduler.pools[0]
    assert pool.size == 2  # one node per host, added by the autoscaler


@pytest.mark.parametrize("autoscaling", [True, False], ids=["pool-full", "no-autoscaler"])
async def test_a_full_pool_or_no_autoscaler_verdict_is_waited_out(k8s, autoscaling):
    """A full pool frees up when other jobs end ("max node group size reached"); without an
    autoscaler nothing ever says the pod is hopeless. Either way the wait goes on."""
    k8s.script(run_forever)
    k8s.nodes(NodePool("v5e", V5E_2X4, {TPU: 4}, size=1, max_size=1), autoscaling=autoscaling)
    waiting = asyncio.create_task(events(submit(k8s)))
    done, _ = await asyncio.wait({waiting}, timeout=7)  # past the first check
    assert not done
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    pods = k8s.pods()
    pending = [p for p in pods if p["status"].get("conditions", [{}])[0].get("reason")]
    assert len(pods) == 2 and len(pending) == 1  # one host placed, one waits


async def test_without_reading_events_an_unschedulable_pod_waits_and_the_log_says_why(k8s, capsys):
    """Optional permission: ``list`` events. Without it the task waits for its timeouts."""
    k8s.grant(docs_role().without("list", "", "events"))
    k8s.nodes(NodePool("v6e", V6E, {TPU: 4}, size=0, max_size=4), autoscaling=True)
    waiting = asyncio.create_task(events(submit(k8s)))
    done, _ = await asyncio.wait({waiting}, timeout=7)
    assert not done
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    task_log = capsys.readouterr().out
    assert "the autoscaler's verdict cannot be read" in task_log
    assert "the identity lacks `list` on `events` in namespace default" in task_log
