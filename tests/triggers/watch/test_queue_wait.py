"""Waiting for capacity, on the emulator's Kueue through the real clients: the task log says
why a JobSet waits (Kueue's message and queue position), each change once; a rejected
ProvisioningRequest, an over-preempted job and ``queue_timeout`` end the wait with the
JobSet deleted; a preempted job within its restart budget resumes when readmitted."""

from __future__ import annotations

import asyncio
import logging
import re
import time

import pytest

from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.contract import JobSettings
from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from harness.jobsets import manifest, run_forever, succeed, trigger_for
from harness.k8s_emulator.kueue_objects import ClusterQueue, LocalQueue
from tests.support.trigger_runs import events

TPU = "google.com/tpu"
CLUSTER = KubernetesCluster()
LOG = logging.getLogger(__name__)
SLICE = 8  # chips of manifest(): two hosts of four


def create(name: str, run_id: str, **kwargs) -> dict:
    body = manifest(name, run_id=run_id, queue_name="q", **kwargs)
    return CLUSTER.hook().create_jobset(body)


async def until(predicate, timeout: float = 20, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


class Told:
    """The task log so far, read as it grows."""

    def __init__(self, capsys) -> None:
        self.capsys, self.text, self.all = capsys, "", ""

    async def line(self, part: str, timeout: float = 20) -> None:
        """Until a new Queue line containing ``part`` has been logged."""
        deadline = time.monotonic() + timeout
        while True:
            new = self.capsys.readouterr().out
            self.text += new
            self.all += new
            before, found, after = self.text.partition(part)
            if found:
                self.text = after
                return
            assert time.monotonic() < deadline, f"no log line with {part!r}: {before[-2000:]}"
            await asyncio.sleep(0.05)


def queue_lines(text: str) -> list[str]:
    return re.findall(r"Queue: (.*?)\s+\[airflow_provider_jax", text)


async def test_a_quota_wait_shows_kueues_reason_and_position_then_runs(k8s, capsys):
    k8s.script(lambda pod: (run_forever if pod.jobset != "mine-0123456789" else succeed(7))(pod))
    k8s.queues(ClusterQueue("cq", {TPU: SLICE}, flavor="v5e"), LocalQueue("default", "q", "cq"))
    holder = create("holder-0123456789", "r0")
    ahead = [create(f"ahead{i}-0123456789", f"r{i}") for i in (1, 2)]
    waiting = asyncio.create_task(events(trigger_for(create("mine-0123456789", "r3"))))
    await Told(capsys).line("more needed, position 3 in queue q")
    for other in (holder, *ahead):  # quota frees: ours is admitted and runs
        CLUSTER.hook().delete_jobset(other["metadata"]["name"], "default")
    (event,) = await asyncio.wait_for(waiting, 30)
    assert event["status"] == "success"


async def test_the_log_names_quota_and_position_once_per_change(k8s, capsys):
    k8s.script(run_forever)
    k8s.queues(ClusterQueue("cq", {TPU: SLICE}, flavor="v5e"), LocalQueue("default", "q", "cq"))
    create("holder-0123456789", "r0")
    create("ahead-0123456789", "r1")
    waiting = asyncio.create_task(events(trigger_for(create("mine-0123456789", "r2"))))
    text = ""
    while "position 2" not in text:
        await asyncio.sleep(0.1)
        text += capsys.readouterr().out
    await asyncio.sleep(2)  # the watch and position polls go on; nothing new to say
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    lines = queue_lines(text + capsys.readouterr().out)
    assert lines[-1] == (
        "waiting: couldn't assign flavors to pod set slice: insufficient unused quota for "
        "google.com/tpu in flavor v5e, 8 more needed, position 2 in queue q"
    )
    assert len(lines) == len(set(lines)) <= 2  # without position, then with it: no repeats


async def test_a_failed_provisioning_request_fails_fast_and_leaves_no_jobset(k8s, tmp_path, capsys):
    k8s.queues(
        ClusterQueue("cq", {TPU: 64}, flavor="flex", checks=("dws-prov",), retries=0),
        LocalQueue("default", "q", "cq"),
    )
    backend = KubernetesBackend(
        JobSettings(
            name="x", namespace="default", log=LOG, deferrable=True, output_dir=str(tmp_path)
        )
    )
    started = backend.start(manifest("flex-0123456789", queue_name="q"))
    waiting = asyncio.create_task(started.deferral.trigger.wait())
    await Told(capsys).line("waiting: admission checks dws-prov Pending")
    failed_at = time.monotonic()
    k8s.provision("flex-0123456789", "Failed", "no capacity for ct5lp-hightpu-4t in us-east5-b")
    event = await asyncio.wait_for(waiting, 10)
    assert time.monotonic() - failed_at < 10
    assert (event.status, event.reason) == ("failed", "AdmissionCheckRejected")
    with pytest.raises(JaxJobFailed, match="dws-prov: no capacity for ct5lp-hightpu-4t"):
        backend.complete(event.to_dict(), CLUSTER.to_dict())
    assert k8s.jobsets() == [] and k8s.running_pods() == 0


async def test_a_provisioned_request_admits_and_a_retry_is_logged(k8s, capsys):
    k8s.script(succeed({"ok": 1}))
    k8s.queues(
        ClusterQueue("cq", {TPU: 64}, flavor="flex", checks=("dws-prov",), retries=1),
        LocalQueue("default", "q", "cq"),
    )
    waiting = asyncio.create_task(events(trigger_for(create("flex-0123456789", "r1"))))
    told = Told(capsys)
    await told.line("waiting: admission checks dws-prov Pending")
    k8s.provision("flex-0123456789", "Failed", "stockout")  # retried: a new request is made
    await told.line("dws-prov Retry (Retrying after failure: stockout)")
    await told.line("waiting: admission checks dws-prov Pending")  # the next request
    k8s.provision("flex-0123456789", "Provisioned", "nodes are ready")
    (event,) = await asyncio.wait_for(waiting, 20)
    assert event["status"] == "success"


@pytest.mark.slow  # it waits out a 20 s queue_timeout
async def test_queue_timeout_fails_at_its_time_with_the_last_reason(k8s, capsys):
    """The one slow drill (20 s): it also measures what a waiting job costs the API."""
    k8s.queues(ClusterQueue("cq", {TPU: 0}, flavor="v5e"), LocalQueue("default", "q", "cq"))
    trigger = trigger_for(create("late-0123456789", "r1"), queue_timeout=20)
    started = time.monotonic()
    (event,) = await asyncio.wait_for(events(trigger), 60)
    took = time.monotonic() - started
    print(f"queue_timeout=20 fired after {took:.1f} s")
    assert 18 <= took <= 25, took
    assert (event["status"], event["reason"]) == ("failed", "QueueTimeout")
    assert "not running on all hosts within queue_timeout (20s)" in event["message"]
    assert (
        "last: waiting: couldn't assign flavors to pod set slice: insufficient quota for "
        in (event["message"])
    )
    await until(lambda: not k8s.jobsets(), what="the JobSet deleted")
    asked = [r for r in k8s.requests if r.method == "GET" and "/jobsets/" not in r.path]
    assert len(asked) <= 6, asked  # 2 lists, 2 watches, a position every 30 s


@pytest.mark.parametrize("max_restarts", [1, 0], ids=["resumes", "fails"])
async def test_kueue_preemption_resumes_within_the_restart_budget(k8s, capsys, max_restarts):
    # The first admission's two pods of the low job train for ever; every pod after them (the
    # preemptor's, the resumed low job's) succeeds. Decided per pod as its script is asked
    # for, never by time: a pod counts as running before its script runs, and on a busy
    # machine that can come after the preemptor is created.
    first_low: set[str] = set()

    def script(pod):
        if pod.jobset.startswith("low-") and (len(first_low) < 2 or pod.name in first_low):
            first_low.add(pod.name)
            return run_forever(pod)
        return succeed({"ok": 1})(pod)

    k8s.script(script)
    k8s.queues(
        ClusterQueue("cq", {TPU: SLICE}, flavor="v5e"),
        LocalQueue("default", "q", "cq"),
        priorities={"low": 100, "high": 1000},
    )
    low = create("low-0123456789", "r1", priority_class_name="low", max_restarts=max_restarts)
    waiting = asyncio.create_task(events(trigger_for(low)))
    await until(lambda: len(first_low) == 2, what="low's two pods training")
    create("high-0123456789", "r2", priority_class_name="high")
    (event,) = await asyncio.wait_for(waiting, 30)
    text = capsys.readouterr().out
    if max_restarts:
        assert event["status"] == "success"
        # Kueue's message, or its count where the Evicted condition came and went between
        # two looks of a busy trigger.
        assert "Queue: evicted by Kueue: Preempted" in text
        assert "(restart 1 of max_restarts=1)" in text
        assert (
            k8s.workload("low-0123456789")["status"]["schedulingStats"]["evictions"][0]["count"]
            == 1
        )
    else:
        assert (event["status"], event["reason"]) == ("failed", "Preempted")
        # Kueue's message, or its count where the Evicted condition came and went between
        # two looks of a busy trigger (seen under make check-under-load).
        said = event["message"]
        assert "due to prioritization in the ClusterQueue" in said or (
            "Preempted (counted by Kueue; readmitted since)" in said
        ), said
        assert "more than max_restarts=0" in said
        await until(lambda: k8s.jobset("low-0123456789") is None, what="the JobSet deleted")


async def test_an_older_kueue_serving_only_v1beta1_is_read(k8s, capsys):
    """Kueue before 0.15 serves Workloads at v1beta1 only: the informer steps back to it."""
    k8s.call(lambda: setattr(k8s.kueue, "versions", ("v1beta1",)))
    k8s.queues(ClusterQueue("cq", {TPU: 0}, flavor="v5e"), LocalQueue("default", "q", "cq"))
    waiting = asyncio.create_task(events(trigger_for(create("old-0123456789", "r1"))))
    await Told(capsys).line("insufficient quota for google.com/tpu in flavor v5e")
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    paths = [r.path for r in k8s.requests if r.path.endswith("/workloads")]
    assert paths[0].startswith("/apis/kueue.x-k8s.io/v1beta2/")
    assert paths[-1].startswith("/apis/kueue.x-k8s.io/v1beta1/")


async def test_without_the_visibility_api_the_wait_has_no_position(k8s, capsys):
    """Optional permission: ``get`` localqueues/pendingworkloads. The log says why, once."""
    from harness.k8s_emulator.rbac import docs_role

    k8s.grant(
        docs_role().without("get", "visibility.kueue.x-k8s.io", "localqueues/pendingworkloads")
    )
    k8s.queues(ClusterQueue("cq", {TPU: 0}, flavor="v5e"), LocalQueue("default", "q", "cq"))
    waiting = asyncio.create_task(events(trigger_for(create("blind-0123456789", "r1"))))
    told = Told(capsys)
    await told.line("Queue: waiting: couldn't assign flavors")
    await told.line("queue position not shown: the identity lacks `get` on ")
    await asyncio.sleep(1)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    lines = queue_lines(told.all + capsys.readouterr().out)
    assert lines and not any("position" in line for line in lines), lines


async def test_capacity_revoked_under_a_running_job_fails_it(k8s, capsys):
    """GKE takes flex-start nodes back (CapacityRevoked): Kueue rejects the check and
    deactivates the Workload, so the task fails with the autoscaler's words."""
    k8s.script(run_forever)
    k8s.queues(
        ClusterQueue("cq", {TPU: 64}, flavor="flex", checks=("dws-prov",)),
        LocalQueue("default", "q", "cq"),
    )
    waiting = asyncio.create_task(events(trigger_for(create("flex-0123456789", "r1"))))
    await Told(capsys).line("admission checks dws-prov Pending")
    k8s.provision("flex-0123456789", "Provisioned", "nodes are ready")
    await until(lambda: k8s.running_pods("flex-0123456789") == 2, what="running")
    k8s.provision("flex-0123456789", "CapacityRevoked", "the VMs were reclaimed")
    (event,) = await asyncio.wait_for(waiting, 10)
    assert (event["status"], event["reason"]) == ("failed", "AdmissionCheckRejected")
    assert "dws-prov: the VMs were reclaimed" in event["message"]
    await until(lambda: k8s.jobset("flex-0123456789") is None, what="the JobSet deleted")
