"""JobSetTrigger against the Kubernetes emulator, through the real kubernetes_asyncio client."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace

import pytest

from airflow_provider_jax.hooks import jobset as jobset_hooks
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.triggers import jobset as trigger_module
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import (
    disrupt_host,
    fail_host,
    manifest,
    run_forever,
    succeed,
    trigger_for,
)
from harness.k8s_emulator import Faults
from harness.k8s_emulator.rbac import docs_role
from harness.real_cluster.images import RUNTIME_IMAGE
from tests.support.imports import heavy_modules_loaded_by
from tests.support.trigger_runs import assert_restart_logged, events, submit

CLUSTER = KubernetesCluster().to_dict()

JOBSETS = ("jobset.x-k8s.io", "jobsets")  # (API group, resource)


async def test_fires_once_with_success_and_streams_the_leaders_log(k8s, capsys):
    k8s.script(succeed({"loss": 0.1}, steps=3))
    fired = await events(submit(k8s))
    assert [e["status"] for e in fired] == ["success"]
    assert fired[0]["jobset"]["conditions"][0]["reason"] == "AllJobsCompleted"
    task_log = capsys.readouterr().out
    # Paced: the newest report shows when the leader's log ends, with the rate so far.
    assert re.search(r"\[0/0\] step 2 · [\d.]+ steps/s: loss=0\.3333", task_log), task_log
    assert "[0/1]" not in task_log  # only the leader's log


async def test_failure_names_the_condition(k8s):
    k8s.script(fail_host(1))
    (event,) = await events(submit(k8s))
    assert event["status"] == "failed"
    assert event["reason"] == "FailJobSetFailurePolicyAction"  # a bug: no restart
    assert event["jobset"]["restarts"] == 0


async def test_restart_within_max_restarts_ends_in_success(k8s, capsys):
    k8s.script(disrupt_host(1, attempts=1))
    (event,) = await events(submit(k8s, max_restarts=1))
    assert event["status"] == "success"
    assert event["jobset"]["restarts"] == 1
    assert_restart_logged(
        capsys.readouterr().out, "1/1", r"exited with code 137 \(killed by SIGKILL\)"
    )


async def test_a_code_error_fails_at_once_with_restarts_to_spare(k8s):
    k8s.script(fail_host(1, attempts=5))
    (event,) = await events(submit(k8s, max_restarts=3))
    assert (event["status"], event["reason"]) == ("failed", "FailJobSetFailurePolicyAction")
    assert event["jobset"]["restarts"] == 0


async def test_a_deleted_jobset_is_a_clear_failure_not_a_hang(k8s):
    k8s.script(run_forever)
    trigger = submit(k8s)
    waiting = asyncio.create_task(events(trigger))
    await asyncio.sleep(0.5)
    KubernetesCluster().hook().delete_jobset(trigger.name, trigger.namespace)
    (event,) = await asyncio.wait_for(waiting, 10)
    assert (event["status"], event["reason"]) == ("failed", "Deleted")


async def test_a_jobset_that_is_not_there_is_gone(k8s):
    trigger = JobSetTrigger(name="never-made", namespace="default", uid="u-1", cluster=CLUSTER)
    (event,) = await asyncio.wait_for(events(trigger), 10)
    assert (event["status"], event["reason"]) == ("failed", "Deleted")


async def test_execution_timeout_is_enforced_while_deferred(k8s):
    k8s.script(run_forever)
    trigger = submit(k8s)
    trigger.deadline = time.time() + 1
    (event,) = await asyncio.wait_for(events(trigger), 10)
    assert event["status"] == "timeout"
    # The trigger stops the slice itself, without waiting for a worker to resume the task.
    k8s.wait_for(lambda: k8s.jobset(trigger.name) is None, trigger.deadline + 5 - time.time())
    assert k8s.controller.deletions == [(trigger.name, "Foreground")]


async def test_serializes_plain_data_and_survives_a_triggerer_restart(k8s):
    k8s.script(lambda pod: succeed(7, duration=2)(pod))
    trigger = submit(k8s)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_provider_jax.triggers.jobset.JobSetTrigger"
    assert json.loads(json.dumps(kwargs)) == kwargs
    first = asyncio.create_task(events(trigger))
    await asyncio.sleep(0.5)
    first.cancel()  # the triggerer stops: no user action, so no on_kill
    await asyncio.gather(first, return_exceptions=True)
    await trigger.cleanup()
    assert k8s.jobset(trigger.name) is not None
    again = JobSetTrigger(**kwargs)
    (event,) = await asyncio.wait_for(events(again), 20)
    assert event["status"] == "success"
    assert len(k8s.submitted) == 1


async def test_a_job_that_ends_at_once_fires_no_sooner_than_fire_not_before(k8s):
    """Airflow 3.3 fails a try whose resumed run is queued before the scheduler drained the
    worker's exit on defer() (apache/airflow#72716): the event waits for the settle time."""
    k8s.script(succeed(1))
    trigger = submit(k8s)
    assert "fire_not_before" not in trigger.serialize()[1]  # a row the last release can load
    trigger.fire_not_before = time.time() + 2
    again = JobSetTrigger(**trigger.serialize()[1])
    (event,) = await asyncio.wait_for(events(again), 20)
    assert event["status"] == "success"
    assert time.time() >= trigger.fire_not_before


def test_the_triggerer_loads_the_class_without_the_kubernetes_clients():
    """Airflow imports a trigger's class on the triggerer's event loop: seconds of client
    imports there stall every trigger and the heartbeat, and the triggers move elsewhere.
    The trigger imports its waiting machinery in a worker thread on its first run instead."""
    loaded = "import airflow.triggers.base\nimport airflow_provider_jax.triggers.jobset"
    assert heavy_modules_loaded_by(loaded) == []
    # Triggers starting while the first one's import runs get the module whole, not the
    # partial one that sys.modules holds meanwhile (a fresh triggerer given 20 at once).
    on_first_runs = """
import asyncio
from airflow_provider_jax.hooks import jobset as jobset_hooks
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.triggers.jobset import load_watch

async def start(i):
    await asyncio.sleep(i * 0.02)
    return hasattr(await load_watch(KubernetesCluster()), "delete")

async def fresh_triggerer():
    return await asyncio.gather(*map(start, range(40)))

whole = asyncio.run(fresh_triggerer())
assert all(whole), f"{whole.count(False)} of 40 triggers got a partly imported module"
"""
    assert "kubernetes_asyncio" in heavy_modules_loaded_by(on_first_runs)


@pytest.mark.parametrize(
    ("task_state", "deleted"),
    [("failed", True), ("unknown", True), ("deferred", False)],
    ids=["user-action", "state-unreadable", "taken-over-by-another-triggerer"],
)
async def test_on_kill_deletes_the_jobset_unless_the_task_still_waits(
    k8s, monkeypatch, task_state, deleted
):
    """Airflow 3.3 calls on_kill for user actions, and also on the old triggerer when
    another one took the trigger over (apache/airflow#73454); then the task is still
    deferred and the slice must live on. The drills in ``tests/e2e`` do both for real."""
    k8s.script(run_forever)
    trigger = submit(k8s)

    async def safe_to_cancel() -> bool:  # the task's state, as the API server would report it
        if task_state == "unknown":
            raise ConnectionError("the API server is not reachable")
        return task_state != "deferred"

    monkeypatch.setattr(trigger, "safe_to_cancel", safe_to_cancel)
    waiting = asyncio.create_task(events(trigger))
    await asyncio.sleep(0.5)
    waiting.cancel()
    await trigger.on_kill()
    await asyncio.gather(waiting, return_exceptions=True)
    if deleted:
        k8s.wait_for(lambda: k8s.jobset(trigger.name) is None, 5, "the JobSet to go")
        assert k8s.pods() == []
        assert k8s.controller.deletions == [(trigger.name, "Foreground")]
    else:
        assert k8s.jobset(trigger.name) is not None
        assert k8s.controller.deletions == []


@pytest.mark.parametrize(("task_left_deferred", "deleted"), [(True, False), (False, True)])
async def test_cleanup_before_airflow_3_3_asks_whether_the_task_still_waits(
    k8s, monkeypatch, task_left_deferred, deleted
):
    monkeypatch.setattr(trigger_module, "_TRIGGER_ON_KILL", False)
    k8s.script(run_forever)
    trigger = submit(k8s)

    async def safe_to_cancel() -> bool:  # the task's state, as the API server would report it
        return not task_left_deferred

    monkeypatch.setattr(trigger, "safe_to_cancel", safe_to_cancel)
    await trigger.cleanup()
    if deleted:
        k8s.wait_for(lambda: k8s.jobset(trigger.name) is None, 5, "the JobSet to go")
    else:
        assert k8s.jobset(trigger.name) is not None


async def test_many_triggers_share_one_watch_and_survive_faults(k8s):
    """Five jobs at once under 20% API faults, watches dropped every second and history
    compacted: every trigger still sees its own outcome, through one shared watch."""
    k8s.script(disrupt_host(1, attempts=1, duration=1.5))
    triggers = [submit(k8s, name=f"job-{i}-0123456789", max_restarts=i % 2) for i in range(5)]
    k8s.faults = Faults(rate=0.2, retry_after=0, drop_watch_after=1.0, expire_rate=0.5)
    fired = await asyncio.wait_for(asyncio.gather(*(events(t) for t in triggers)), 60)
    k8s.faults = Faults()
    outcomes = [e[0]["status"] for e in fired]
    assert outcomes == ["failed", "success", "failed", "success", "failed"]
    watches = [r for r in k8s.requests if r.watch and "jobsets" in r.path]
    assert len(watches) < 40, "one informer for all five, not one watch each"


async def test_survives_an_api_server_restart_under_its_watch(k8s):
    """The watch is cut mid-reply, not closed, and the history it would resume from is gone:
    the informer retries, meets 410 Gone, lists again, and the trigger still fires."""
    k8s.script(succeed(duration=2))
    trigger = submit(k8s)
    waiting = asyncio.create_task(events(trigger))
    await asyncio.to_thread(k8s.wait_for, lambda: k8s.api.watches, 10, "the watch")
    await asyncio.to_thread(k8s.restart)
    (event,) = await asyncio.wait_for(waiting, 20)
    assert event["status"] == "success"
    lists = [r for r in k8s.requests if r.method == "GET" and r.path.endswith("/jobsets")]
    assert sum(not r.watch for r in lists) == 2  # the first, and the one after 410 Gone


async def test_a_refused_relist_after_a_restart_is_retried_within_the_budget(k8s):
    """A restarted kube-apiserver refused the triggers' relist (403) for a while with their
    Role still bound (found by bench/real_apiserver_watch.py): once a list has gone through,
    a refusal is retried with backoff like a 503, and the job's end is still heard."""
    k8s.script(run_forever)
    trigger = submit(k8s)
    waiting = asyncio.create_task(events(trigger))
    await asyncio.to_thread(k8s.wait_for, lambda: k8s.api.watches, 10, "the watch")
    refusing = docs_role().without("list", *JOBSETS).without("watch", *JOBSETS)
    k8s.grant(refusing)
    await asyncio.to_thread(k8s.restart)  # 410 Gone: the informer must list again

    def refused() -> list:
        return [r for r in k8s.requests if r.status == 403 and r.path.endswith("/jobsets")]

    await asyncio.to_thread(k8s.wait_for, refused, 10, "a refused relist")
    assert not waiting.done()
    k8s.grant(docs_role())

    def watching_again() -> bool:
        # Not polling: a refused watch after watches went through is no verdict on RBAC.
        last_refusal = max(r.at for r in refused())
        return any(r.watch and r.at > last_refusal and r.status == "ok" for r in k8s.requests)

    await asyncio.to_thread(k8s.wait_for, watching_again, 20, "a watch after the refusals")
    k8s.release()
    (event,) = await asyncio.wait_for(waiting, 30)
    assert event["status"] == "success"


async def test_a_change_reaches_its_waiter_while_the_list_is_still_being_read(k8s, monkeypatch):
    """A relist of 10,000 JobSets is 20 pages and seconds of parsing: the watch from the first
    page's version runs beside the other pages, so a job that ends meanwhile is heard at once,
    even when its own page has not come yet."""
    monkeypatch.setattr(jobset_hooks, "LIST_PAGE_SIZE", 1)
    k8s.script(run_forever)
    hook = KubernetesCluster().hook()
    created = [hook.create_jobset(manifest(f"{x}-0123456789")) for x in "abc"]
    k8s.faults = Faults(hold=120, only=lambda r: "continue=" in r.query_string)
    waiting = asyncio.create_task(events(trigger_for(created[-1])))  # on the last page
    # Bounds on states, generous for a busy machine; the event's stays well under the hold.
    await asyncio.to_thread(k8s.wait_for, lambda: k8s.api.watches, 60, "the watch")
    k8s.release()
    (event,) = await asyncio.wait_for(waiting, 60)  # not the 120 s the pages are held
    assert event["status"] == "success"
    lists = [r for r in k8s.requests if r.method == "GET" and r.path.endswith("/jobsets")]
    pages = [r for r in lists if not r.watch]
    assert len(pages) == 2 and "continue=" in pages[1].query  # the second page, still held


async def test_falls_back_to_polling_where_watch_is_forbidden(k8s):
    k8s.grant(docs_role().without("watch", *JOBSETS))
    k8s.script(succeed(duration=0.5))
    trigger = submit(k8s)
    trigger.watch = replace(trigger.watch, poll_interval=0.2)
    (event,) = await asyncio.wait_for(events(trigger), 20)
    assert event["status"] == "success"


async def test_gives_up_with_an_error_event_when_the_api_stays_down(k8s):
    k8s.script(run_forever)
    trigger = submit(k8s)
    trigger.watch = replace(trigger.watch, retry_budget=2)
    k8s.faults = Faults(rate=1.0, kinds=(503,), retry_after=0)
    (event,) = await asyncio.wait_for(events(trigger), 20)
    assert event["status"] == "error"
    assert "503" in event["message"]


async def test_a_refusal_is_an_error_event_at_once(k8s):
    k8s.script(run_forever)
    trigger = submit(k8s)
    k8s.faults = Faults(rate=1.0, kinds=(403,))
    (event,) = await asyncio.wait_for(events(trigger), 10)
    assert event["status"] == "error"
    assert "403" in event["message"]


async def test_a_pod_whose_image_cannot_be_pulled_fails_the_wait(k8s):
    k8s.unpullable(RUNTIME_IMAGE, f'failed to pull and unpack image "{RUNTIME_IMAGE}": not found')
    started = time.monotonic()
    (event,) = await asyncio.wait_for(events(submit(k8s)), 20)
    assert (event["status"], event["reason"]) == ("failed", "PodsCannotStart")
    assert "[0/0] cannot start: Image cannot be pulled" in event["message"]
    assert f'{RUNTIME_IMAGE}": not found' in event["message"]
    assert time.monotonic() - started < 10  # the first check, not a timeout
    assert k8s.jobsets()  # the operator applies on_finish_action


async def test_a_throttled_pull_is_waited_out(k8s):
    k8s.unpullable(RUNTIME_IMAGE, "pull QPS exceeded")
    waiting = asyncio.create_task(events(submit(k8s)))
    done, _ = await asyncio.wait({waiting}, timeout=7)  # past the first check
    assert not done
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
