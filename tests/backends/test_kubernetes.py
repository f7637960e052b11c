"""The Kubernetes backend's steps against the emulator: submit or reattach, the leader's
result, the failure report, and on_finish_action. End to end runs are in test_kubernetes_e2e."""

from __future__ import annotations

import json
import logging
import math
import time
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote

import pytest

from airflow_provider_jax.backends.kubernetes import KubernetesBackend, submit
from airflow_provider_jax.backends.kubernetes_failure import explain_failure
from airflow_provider_jax.contract import (
    CLUSTER_DEADLINE_GRACE_S,
    RESUME_SETTLE_S,
    ClusterSettings,
    JobSettings,
)
from airflow_provider_jax.exceptions import JaxCodeError, JaxJobFailed, JobSetConflict
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.links.jobset import (
    JobSetLogsLink,
    JobSetWorkloadLink,
    KueueEventsLink,
    cloud_logging_url,
    gke_workload_url,
    kueue_events_url,
)
from airflow_provider_jax.manifest.failure_policy import CODE_ERROR_RULE
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.reporting.host_logs import SUMMARY_HEADER, SUMMARY_LINES
from airflow_provider_jax.runtime.messages import failure_message, success_message
from airflow_provider_jax.triggers.watch.events import JobSetEvent
from harness.jobsets import manifest, run_forever, succeed
from harness.k8s_emulator import Emulator, Faults, PodRun, PodScript

CLUSTER = KubernetesCluster()
LOG = logging.getLogger(__name__)


def operator(tmp_path: Path, **kwargs) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        image="img:1",
        command=["python3", "-c", "pass"],
        output_dir=str(tmp_path),
        **kwargs,
    )


def backend(tmp_path: Path, **kwargs) -> KubernetesBackend:
    """The backend as the operator would set it up for ``name`` with ``output_dir=tmp_path``."""
    return KubernetesBackend(
        JobSettings(name="unused", namespace="default", log=LOG, output_dir=str(tmp_path), **kwargs)
    )


def complete(tmp_path: Path, event: dict, **kwargs):
    """What the task returns once the trigger fired ``event``."""
    return backend(tmp_path, **kwargs).complete(event, CLUSTER.to_dict()).result


def finished(k8s: Emulator, body: dict) -> dict:
    """Submit ``body`` and wait until it has finished; the trigger's event for it."""
    ref = submit(CLUSTER.hook(), CLUSTER, body, LOG)
    jobset = k8s.wait_for(lambda: _terminal(k8s, ref.name), 20, "the JobSet to finish")
    state = jobset["status"]["terminalState"]
    condition = jobset["status"]["conditions"][-1]
    outcome = "success" if state == "Completed" else "failed"
    return JobSetEvent(
        outcome, ref.name, ref.namespace, ref.uid, condition["reason"], condition["message"]
    ).to_dict()


def _terminal(k8s: Emulator, name: str) -> dict | None:
    jobset = k8s.jobset(name)
    return jobset if jobset and jobset["status"].get("terminalState") else None


def test_the_logs_link_is_cloud_logging_filtered_by_jobset_name():
    url = cloud_logging_url(
        project_id="proj", location="us-central2", cluster_name="tpu", namespace="ml", name="t-1"
    )
    query = unquote(url.split(";query=")[1].split("?")[0])
    assert 'labels."k8s-pod/jobset_sigs_k8s_io/jobset-name"="t-1"' in query.splitlines()
    assert 'resource.labels.cluster_name="tpu"' in query.splitlines()
    assert url.startswith("https://console.cloud.google.com/logs/query;query=")
    assert url.endswith("?project=proj")


def test_the_workload_link_is_the_gke_page_xpk_prints():
    url = gke_workload_url(
        project_id="proj", location="us-central2", cluster_name="tpu", namespace="ml", name="t-1"
    )
    assert url == (
        "https://console.cloud.google.com/kubernetes/service/us-central2/tpu/ml/t-1/details"
        "?project=proj"
    )


def test_the_kueue_link_is_cloud_logging_of_the_workloads_events():
    url = kueue_events_url(
        project_id="proj", location="us-central2", cluster_name="tpu", namespace="ml", name="t-1"
    )
    query = unquote(url.split(";query=")[1].split("?")[0]).splitlines()
    assert query[0] == 'log_id("events")'
    assert 'jsonPayload.involvedObject.kind="Workload"' in query
    assert 'jsonPayload.involvedObject.namespace="ml"' in query
    assert 'jsonPayload.involvedObject.name:"jobset-t-1-"' in query  # Kueue's name, any hash
    assert 'resource.labels.cluster_name="tpu"' in query
    assert url.endswith("?project=proj")


@pytest.mark.parametrize("queue_name", [None, "team-a"])
def test_a_gke_task_gets_the_kueue_link_only_when_queued(k8s, tmp_path, queue_name):
    """A task that names its GKE cluster, once its endpoint is looked up (the emulator's)."""
    k8s.script(run_forever)
    gke = ClusterSettings(project_id="proj", location="us-central2", cluster_name="tpu")
    running = backend(tmp_path, cluster=gke)
    running._cluster = CLUSTER  # what the GKE lookup found
    body = manifest(queue_name=queue_name)
    started = running.start(body)
    try:
        expected = {JobSetWorkloadLink().xcom_key, JobSetLogsLink().xcom_key}
        if queue_name:
            expected.add(KueueEventsLink().xcom_key)
        assert set(started.links) == expected
        if queue_name:
            name = body["metadata"]["name"]
            assert f"jobset-{name}-" in unquote(started.links[KueueEventsLink().xcom_key])
    finally:
        running.kill()


@pytest.mark.parametrize("deferrable", [True, False])
def test_only_a_deferred_wait_holds_its_event_for_the_settle_time(k8s, tmp_path, deferrable):
    k8s.script(run_forever)
    running = backend(tmp_path, deferrable=deferrable)
    before = time.time()
    started = running.start(manifest())
    try:
        settle = started.handle.fire_not_before
        if deferrable:
            assert before + RESUME_SETTLE_S <= settle <= time.time() + RESUME_SETTLE_S
        else:
            assert settle is None  # the operator awaits the wait itself: nothing to race
    finally:
        running.kill()


def test_submit_reattaches_to_a_running_jobset_of_the_same_task_instance(k8s):
    k8s.script(run_forever)
    hook = CLUSTER.hook()
    first = submit(hook, CLUSTER, manifest(), LOG)
    again = submit(hook, CLUSTER, manifest(), LOG)
    assert again == first
    assert len(k8s.submitted) == 1


def test_a_later_try_replaces_a_finished_jobset_once_it_is_gone(k8s):
    k8s.script(succeed())
    event = finished(k8s, manifest(try_number=1))
    assert submit(CLUSTER.hook(), CLUSTER, manifest(try_number=1), LOG).uid == event["uid"]
    fresh = submit(CLUSTER.hook(), CLUSTER, manifest(try_number=2), LOG)
    assert fresh.uid != event["uid"]
    assert len(k8s.submitted) == 2
    assert k8s.controller.deletions == [(fresh.name, "Foreground")]


def test_a_retry_after_a_crash_before_deferring_reattaches(k8s):
    """Try 1's worker died before it deferred: its JobSet runs on, and try 2 waits on it."""
    k8s.script(run_forever)
    first = submit(CLUSTER.hook(), CLUSTER, manifest(try_number=1), LOG)
    assert submit(CLUSTER.hook(), CLUSTER, manifest(try_number=2), LOG) == first
    assert len(k8s.submitted) == 1 and k8s.controller.deletions == []


def test_a_cleared_deferred_task_reruns_on_a_fresh_jobset_whatever_the_timing(k8s, tmp_path):
    """The clear-rerun race: try 1 deferred on its JobSet; the user clears it, and try 2
    starts before try 1's trigger has deleted the JobSet (it deletes slowly, too). Try 2
    must not reattach to a JobSet that is about to vanish: it deletes it itself and waits
    until it is gone, then starts afresh."""
    k8s.script(run_forever)
    k8s.hold_deletions(3.0)
    first = backend(tmp_path, deferrable=True).start(manifest(try_number=1))
    assert first.deferral is not None
    old_uid = k8s.jobset(first.name)["metadata"]["uid"]
    began = time.monotonic()
    ref = submit(CLUSTER.hook(), CLUSTER, manifest(try_number=2), LOG)
    waited = time.monotonic() - began
    assert ref.uid != old_uid and k8s.jobset(first.name)["metadata"]["uid"] == ref.uid
    assert waited >= 3.0  # it waited for the old one to be gone, not merely marked
    assert k8s.controller.deletions == [(first.name, "Foreground")]
    # The old trigger's own delete, arriving late, never touches the new JobSet.
    assert CLUSTER.hook().delete_jobset(first.name, "default", old_uid) is False
    assert k8s.jobset(first.name)["metadata"]["uid"] == ref.uid


def test_a_jobset_being_deleted_is_waited_for_never_reattached(k8s):
    """The old trigger's Foreground delete got there first: the JobSet is still there,
    marked with a deletionTimestamp, for a while. The new try waits it out."""
    k8s.script(run_forever)
    k8s.hold_deletions(3.0)
    old = submit(CLUSTER.hook(), CLUSTER, manifest(try_number=1), LOG)
    assert CLUSTER.hook().delete_jobset(old.name, "default", old.uid)
    assert k8s.jobset(old.name)["metadata"].get("deletionTimestamp")
    fresh = submit(CLUSTER.hook(), CLUSTER, manifest(try_number=2), LOG)
    assert fresh.uid != old.uid and len(k8s.submitted) == 2


def test_waiting_for_a_deletion_is_bounded_with_a_clear_error(k8s, monkeypatch):
    from airflow_provider_jax.backends import kubernetes

    k8s.script(run_forever)
    k8s.hold_deletions(30.0)
    old = submit(CLUSTER.hook(), CLUSTER, manifest(try_number=1), LOG)
    CLUSTER.hook().delete_jobset(old.name, "default", old.uid)
    monkeypatch.setattr(kubernetes, "GONE_TIMEOUT_S", 1)
    with pytest.raises(JobSetConflict, match="still being deleted after 1s"):
        submit(CLUSTER.hook(), CLUSTER, manifest(try_number=2), LOG)
    assert len(k8s.submitted) == 1


def test_submit_refuses_a_jobset_made_for_another_task_instance(k8s):
    k8s.script(run_forever)
    submit(CLUSTER.hook(), CLUSTER, manifest(run_id="scheduled__1"), LOG)
    with pytest.raises(JobSetConflict, match="not made for this task instance"):
        submit(CLUSTER.hook(), CLUSTER, manifest(run_id="scheduled__2"), LOG)
    assert len(k8s.jobsets()) == 1 and k8s.controller.deletions == []


def test_submit_refuses_a_jobset_its_watch_could_never_see(k8s):
    """The trigger's shared watch selects on the managed-by label: without it the wait
    would never end, so nothing is created."""
    unlabelled = manifest()
    del unlabelled["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    with pytest.raises(ValueError, match="lacks the label app.kubernetes.io/managed-by"):
        submit(CLUSTER.hook(), CLUSTER, unlabelled, LOG)
    assert k8s.submitted == []


@pytest.mark.parametrize("script", [run_forever, succeed(duration=0.01)], ids=["runs", "done"])
def test_submit_survives_a_create_whose_reply_was_lost(k8s, script):
    """The retried create meets our own JobSet (409): running or already done, it is ours to
    wait on; the job never runs twice."""
    k8s.script(script)
    posts = iter(range(100))
    k8s.faults = Faults(
        rate=1.0, kinds=("lost",), only=lambda r: r.method == "POST" and not next(posts)
    )
    ref = submit(CLUSTER.hook(), CLUSTER, manifest(), LOG)
    assert ref.uid == k8s.jobsets()[0]["metadata"]["uid"]
    assert len(k8s.submitted) == 1


def test_a_result_too_big_for_the_termination_message_is_read_from_its_uri(k8s, tmp_path):
    big = {"weights": list(range(2000))}
    (tmp_path / "result.json").write_text(json.dumps(big))

    def script(pod: PodRun) -> PodScript:
        leader = pod.slice_index == pod.host_index == 0
        uri = str(tmp_path / "result.json")
        return PodScript(message=success_message(result_uri=uri) if leader else "")

    k8s.script(script)
    event = finished(k8s, manifest())
    assert complete(tmp_path, event) == big


def test_without_a_message_the_result_comes_from_output_dir(k8s, tmp_path):
    (tmp_path / "result.json").write_text('{"from": "output_dir"}')
    k8s.script(lambda pod: PodScript())
    event = finished(k8s, manifest())
    assert complete(tmp_path, event) == {"from": "output_dir"}


def test_the_failure_report_puts_the_culprit_first_and_stays_bounded(k8s, caplog):
    def script(pod: PodRun) -> PodScript:
        if pod.host_index == 1:
            trace = "Traceback (most recent call last):\n" + "  frame\n" * 500 + "KeyError: 'w'\n"
            return PodScript(1, failure_message("KeyError: 'w'", trace), ["x" * 50] * 500, 0.1)
        return PodScript(logs=["waiting"], duration=math.inf)  # taken down with it

    k8s.script(script)
    event = finished(k8s, manifest(hosts=8))
    caplog.set_level(logging.INFO, logger=LOG.name)
    caplog.clear()  # only what explaining the failure logs
    error = explain_failure(CLUSTER.hook(), event["name"], "default", JobSetEvent.from_dict(event))
    report = str(error)
    assert isinstance(error, JaxCodeError)  # a bug: cause first, then the summary
    assert report.startswith("[0/1] KeyError: 'w'\n" + error.summary + "\n")
    lines = error.summary.splitlines()
    assert lines[0].startswith(
        f"JobSet default/{event['name']} failed: FailJobSetFailurePolicyAction"
    )
    assert lines[1] == "Not shown: 4 more failed pods, [0/4] [0/5] [0/6] [0/7]"
    assert [f.tag for f in error.failures] == ["[0/1]", "[0/0]", "[0/2]", "[0/3]"]
    assert error.failures[0].log_tail.count("\n") <= 30
    assert len(report) < 20_000
    # Last in the error: the last lines of the hosts it does not show otherwise, 5 at most.
    assert caplog.messages == []  # nothing apart from the error
    others = report.splitlines()[report.splitlines().index(SUMMARY_HEADER) :]
    tags = list(dict.fromkeys(line.split(" ", 1)[0] for line in others[1:]))
    assert tags == ["[0/4]", "[0/5]", "[0/6]", "[0/7]"]
    assert all(line.endswith(" waiting") for line in others[1:])
    assert len(others) <= 1 + len(tags) * SUMMARY_LINES
    assert others[-1] == "[0/7] waiting"


@pytest.mark.parametrize(
    ("action", "outcome", "kept"),
    [
        ("keep_jobset", "success", True),
        ("delete_succeeded_jobset", "success", False),
        ("delete_succeeded_jobset", "failed", True),
        ("delete_jobset", "failed", False),
    ],
)
def test_on_finish_action(k8s, tmp_path, action, outcome, kept):
    k8s.script(succeed() if outcome == "success" else lambda pod: PodScript(exit_code=1))
    event = finished(k8s, manifest(hosts=1))
    if outcome == "success":
        complete(tmp_path, event, on_finish_action=action)
    else:
        with pytest.raises(JaxJobFailed):
            complete(tmp_path, event, on_finish_action=action)
    if kept:
        assert "deletionTimestamp" not in k8s.jobset(event["name"])["metadata"]
    else:
        k8s.wait_for(lambda: k8s.jobset(event["name"]) is None, 5, "the JobSet to go")


def test_when_airflow_fails_a_deferred_task_itself_the_jobset_goes(k8s, tmp_path):
    """Airflow's own trigger timeout (a backstop behind ours) resumes the task with
    ``__fail__``; the JobSet must not outlive the task."""
    from airflow.sdk.exceptions import TaskDeferralTimeout

    k8s.script(run_forever)
    op = operator(tmp_path)
    ti = SimpleNamespace(
        dag_id="dag",
        task_id="train",
        run_id="manual__1",
        map_index=-1,
        try_number=1,
        start_date=None,
    )
    context = {"ti": ti}
    ref = submit(CLUSTER.hook(), CLUSTER, op.build_manifest(context), LOG)
    with pytest.raises(TaskDeferralTimeout):
        op.resume_execution("__fail__", {"error": "Trigger timeout"}, context)
    k8s.wait_for(lambda: k8s.jobset(ref.name) is None, 5, "the JobSet to go")


def test_execution_timeout_is_also_the_clusters_deadline(tmp_path, validate_jobset):
    op = operator(tmp_path, execution_timeout=timedelta(hours=2))
    manifest = op.dry_run()
    validate_jobset(manifest)
    job = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job["activeDeadlineSeconds"] == 2 * 3600 + CLUSTER_DEADLINE_GRACE_S
    assert manifest["spec"]["failurePolicy"]["rules"] == [
        CODE_ERROR_RULE,
        {
            "name": "FailAtDeadline",
            "action": "FailJobSet",
            "onJobFailureReasons": ["DeadlineExceeded"],
        },
    ]
    assert "activeDeadlineSeconds" not in operator(tmp_path).dry_run()["spec"]["replicatedJobs"][0]


def test_with_no_airflow_left_the_cluster_stops_the_slice_at_its_deadline(k8s):
    """The backstop: nothing of Airflow runs, yet the slice stops, with no restart."""
    k8s.script(run_forever)
    body = manifest(max_restarts=3, active_deadline_seconds=2)
    created = CLUSTER.hook().create_jobset(body)
    jobset = k8s.wait_for(lambda: _terminal(k8s, created["metadata"]["name"]), 10, "the deadline")
    assert jobset["status"]["terminalState"] == "Failed"
    assert jobset["status"]["restarts"] == 0
    failed = jobset["status"]["conditions"][-1]
    assert failed["reason"] == "FailJobSetFailurePolicyAction"
    assert "first failed job" in failed["message"]
    assert k8s.running_pods() == 0


def test_the_leaders_last_report_is_logged_and_returned(k8s, tmp_path, caplog):
    """A deferred task's log has no streamed leader lines of its own: say the last report."""
    caplog.set_level(logging.INFO, logger=LOG.name)

    def script(pod: PodRun) -> PodScript:
        leader = pod.slice_index == pod.host_index == 0
        return PodScript(message=success_message(1, {"step": 30, "loss": 0.5}) if leader else "")

    k8s.script(script)
    outcome = backend(tmp_path).complete(finished(k8s, manifest()), CLUSTER.to_dict())
    assert (outcome.result, outcome.report) == (1, {"step": 30, "loss": 0.5})
    assert "Leader's last report: step 30: loss=0.5" in caplog.messages
