"""``stream_logs``: whose lines the trigger streams into the task log, bounded per host, and
what it costs in requests, against the Kubernetes emulator."""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import parse_qs

import pytest

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.manifest.jobset_api import RESTART_ATTEMPT_LABEL
from airflow_provider_jax.runtime.messages import report_line
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import disrupt_host, manifest, succeed, trigger_for
from harness.k8s_emulator import PodRun, PodScript
from tests.support.trigger_runs import events


def submit(k8s, *, hosts: int = 2, max_restarts: int = 0, **kwargs) -> JobSetTrigger:
    body = manifest(hosts=hosts, max_restarts=max_restarts)
    return trigger_for(KubernetesCluster().hook().create_jobset(body), **kwargs)


async def wait(trigger: JobSetTrigger) -> dict:
    (event,) = await events(trigger)
    assert event["status"] == "success", event
    return event


def log_requests(k8s) -> list[str]:
    """The paths of the log streams opened."""
    return [r.path for r in k8s.requests if r.path.endswith("/log")]


def pod_lists(k8s) -> int:
    return sum(1 for r in k8s.requests if r.path.endswith("/pods") and not r.watch)


def pod_list_selectors(k8s) -> list[str]:
    return [
        parse_qs(r.query)["labelSelector"][0]
        for r in k8s.requests
        if r.path.endswith("/pods") and not r.watch
    ]


@pytest.mark.parametrize("hosts", [2, 8])
async def test_all_streams_every_host_with_its_prefix_for_one_list_and_a_stream_each(
    k8s, capsys, hosts
):
    k8s.script(succeed({"loss": 0.1}, steps=3))
    await wait(submit(k8s, hosts=hosts, stream_logs="all"))
    task_log = capsys.readouterr().out
    for host in range(hosts):
        assert f"[0/{host}] hello from [0/{host}]" in task_log, task_log
    # Every host reports the same step: only the leader's reports are shown.
    assert re.findall(r"\[0/(\d+)\] step \d", task_log) and all(
        host == "0" for host in re.findall(r"\[0/(\d+)\] step \d", task_log)
    )
    assert len(log_requests(k8s)) == hosts  # one stream per pod
    assert pod_lists(k8s) <= 4  # shared by all hosts: a few while pods start, not one per host


async def test_leader_is_the_default_and_none_opens_no_stream(k8s, capsys):
    k8s.script(succeed(steps=2))
    await wait(submit(k8s))
    leader_only = capsys.readouterr().out
    assert "[0/0] hello from [0/0]" in leader_only
    assert "[0/1]" not in leader_only
    assert len(log_requests(k8s)) == 1
    # At the leader's pod only (a big slice's list is hundreds of kilobytes to parse), and
    # not again as the pods end. Usually one look, once the JobSet says its pods run; a second
    # when the first came from the 2 s fallback on a loaded machine (the shuffled-order run
    # found it) and found the pod not yet up.
    selectors = pod_list_selectors(k8s)
    assert 1 <= len(selectors) <= 2, selectors
    assert all(
        s.endswith(",jobset.sigs.k8s.io/job-index=0,batch.kubernetes.io/job-completion-index=0")
        for s in selectors
    )

    k8s.reset()
    k8s.script(succeed(steps=2))
    await wait(submit(k8s, stream_logs="none"))
    assert "hello from" not in capsys.readouterr().out
    assert log_requests(k8s) == []
    assert pod_lists(k8s) == 0


async def test_a_cluster_before_kubernetes_1_28_still_streams_the_leader(k8s, capsys):
    """Its pods carry the completion index as an annotation only: the leader's own list finds
    nothing, and the JobSet's full list is read instead."""
    k8s.controller.pod_index_label = False
    k8s.script(succeed(steps=2))
    await wait(submit(k8s, hosts=8))
    task_log = capsys.readouterr().out
    assert "[0/0] hello from [0/0]" in task_log and "[0/1]" not in task_log
    leader_only, everyone = pod_list_selectors(k8s)
    assert leader_only.endswith("completion-index=0") and everyone.count(",") == 0
    assert len(log_requests(k8s)) == 1


async def test_lines_are_bounded_per_host_while_the_leaders_progress_goes_on(k8s, capsys):
    chatty = succeed(steps=0)

    def script(pod: PodRun) -> PodScript:
        base = chatty(pod)
        lines = [f"line {i} of {pod.plan.tag}" for i in range(10)]
        reports = [json_report(step) for step in (1, 2, 3)]
        return PodScript(logs=[*lines, *reports], message=base.message, duration=0.3)

    k8s.script(script)
    await wait(submit(k8s, stream_logs="all", log_lines=4))
    task_log = capsys.readouterr().out
    for tag in ("[0/0]", "[0/1]"):
        shown = re.findall(rf"{re.escape(tag)} line (\d+) of", task_log)
        assert shown == ["0", "1", "2"], task_log
        assert f"{tag} (log output stops here in the task log" in task_log
    assert "[0/0] step 3" in task_log  # past the lines' budget, the progress still shows


async def test_after_a_restart_every_host_of_the_new_attempt_is_followed(k8s, capsys):
    k8s.script(disrupt_host(1, attempts=1))
    await wait(submit(k8s, max_restarts=1, stream_logs="all"))
    task_log = capsys.readouterr().out
    assert task_log.count("[0/1] hello from [0/1]") == 1  # the second attempt's host 1
    # Both pods of the new attempt, whether or not the first attempt's leader was followed
    # before host 1 died (on a busy machine the restart can come first).
    new = {
        pod["metadata"]["name"]
        for pod in k8s.pods()
        if pod["metadata"]["labels"].get(RESTART_ATTEMPT_LABEL) == "1"
    }
    assert len(new) == 2
    assert new <= {path.split("/")[-2] for path in log_requests(k8s)}, log_requests(k8s)


async def test_a_stream_cut_while_its_pod_runs_resumes_without_repeating_a_line(k8s, capsys):
    done = succeed(steps=0)

    def script(pod: PodRun) -> PodScript:
        lines = [f"line {i} of {pod.plan.tag}" for i in range(8)]
        return PodScript(logs=lines, message=done(pod).message, duration=2.0)

    k8s.script(script)
    waiting = asyncio.ensure_future(wait(submit(k8s)))
    leader_wrote = lambda: any(  # noqa: E731
        len(p.log) >= 3 for p in k8s.controller.pods.values() if p.host_index == 0
    )
    while not (leader_wrote() and log_requests(k8s)):
        await asyncio.sleep(0.05)
    k8s.call(lambda: [task.cancel() for task in k8s.api.streams - k8s.api.watches])
    await waiting
    shown = re.findall(r"\[0/0\] line (\d+) of", capsys.readouterr().out)
    assert shown == [str(i) for i in range(8)]  # each line once, in order
    assert len(log_requests(k8s)) == 2  # the cut stream, and the one that resumed


def test_serializes_stream_logs_only_when_not_the_default(k8s):
    leader = submit(k8s)
    _, kwargs = leader.serialize()
    assert "stream_logs" not in kwargs  # a row the previous release can load
    every = JobSetTrigger(**{**kwargs, "stream_logs": "all"})
    _, again = every.serialize()
    assert json.loads(json.dumps(again))["stream_logs"] == "all"
    assert JobSetTrigger(**again).watch.stream_logs == "all"


def json_report(step: int) -> str:
    return report_line({"step": step, "loss": 1.0 / step})
