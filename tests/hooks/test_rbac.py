"""The Role that docs/kubernetes.md publishes is sufficient and minimal, and each optional
permission degrades the way the docs say. The emulator enforces RBAC in every Kubernetes test
with exactly that Role (``k8s_fixtures``); here the whole life of a job is recorded."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from airflow_provider_jax.backends.kubernetes import KubernetesBackend, submit
from airflow_provider_jax.contract import JobSettings
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.hooks.api_errors import explain
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import fail_host, manifest, run_forever, succeed
from harness.k8s_emulator import Emulator
from harness.k8s_emulator.kueue_objects import ClusterQueue, LocalQueue
from harness.k8s_emulator.rbac import docs_role
from harness.k8s_emulator.scheduler import NodePool

LOG = logging.getLogger(__name__)
CLUSTER = KubernetesCluster()
JOBSETS = ("jobset.x-k8s.io", "jobsets")


def backend(tmp_path: Path, **kwargs) -> KubernetesBackend:
    return KubernetesBackend(
        JobSettings(name="unused", namespace="default", log=LOG, output_dir=str(tmp_path), **kwargs)
    )


def run(k8s: Emulator, tmp_path: Path, body: dict, **kwargs) -> object:
    """A deferrable task's life: submit, defer, wait (watch, stream the leader's log), and
    complete (read the leader's result, delete the JobSet)."""
    chosen = backend(tmp_path, deferrable=True, **kwargs)
    started = chosen.start(body)
    trigger = JobSetTrigger(**started.deferral.trigger.serialize()[1])
    event = asyncio.run(trigger.wait())
    return chosen.complete(event.to_dict(), CLUSTER.to_dict())


def test_the_docs_role_is_sufficient_and_minimal(k8s: Emulator, tmp_path: Path) -> None:
    role = docs_role()
    k8s.grant(role)
    k8s.script(succeed({"loss": 0.1}))
    assert run(k8s, tmp_path, manifest(try_number=1)).result == {"loss": 0.1}
    k8s.script(fail_host(1))  # a failure: the failing host's log and message are read
    with pytest.raises(Exception, match="Traceback"):
        run(k8s, tmp_path, manifest(try_number=2))
    # pods no node can hold: the autoscaler's verdict is read from the pod's events
    k8s.nodes(NodePool("gpu", {"pool": "gpu"}, {}, size=0, max_size=1), autoscaling=True)
    with pytest.raises(Exception, match="cannot be scheduled"):
        run(k8s, tmp_path, manifest(try_number=5))
    k8s.nodes()
    # a Kueue queue with no room: its Workload is watched, its position read, till timeout
    k8s.queues(ClusterQueue("cq", {"google.com/tpu": 0}), LocalQueue("default", "q", "cq"))
    with pytest.raises(Exception, match="queue_timeout"):
        run(
            k8s,
            tmp_path,
            manifest(try_number=6, queue_name="q"),
            watch=WatchOptions(queue_timeout=3),
        )
    k8s.script(run_forever)  # a clear while deferred, then a kill
    backend(tmp_path, deferrable=True).start(manifest(try_number=3))
    submit(CLUSTER.hook(), CLUSTER, manifest(try_number=4), LOG)
    backend(tmp_path).start(manifest(try_number=8))  # its worker then dies, never deferred
    backend(tmp_path, deferrable=True).start(manifest(try_number=9))  # reattaches, claims it
    backend(tmp_path).kill()

    assert role.denied == []  # sufficient
    unused = role.grants() - role.used
    assert not unused, f"the docs' Role grants what nothing uses: {sorted(unused)}"  # minimal


def test_without_watch_the_trigger_polls(k8s: Emulator, tmp_path: Path) -> None:
    """Optional: the docs say the trigger falls back to polling with ``list``."""
    k8s.grant(docs_role().without("watch", *JOBSETS))
    k8s.script(succeed({"ok": 1}, duration=0.5))
    assert run(k8s, tmp_path, manifest()).result == {"ok": 1}
    assert any(r.status == 403 and r.watch for r in k8s.requests)


def test_without_pod_logs_the_task_still_succeeds_and_says_why(
    k8s: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Optional: without ``pods/log`` the leader's log is not streamed; the result stands."""
    k8s.grant(docs_role().without("get", "", "pods/log"))
    k8s.script(succeed({"ok": 2}))
    assert run(k8s, tmp_path, manifest()).result == {"ok": 2}
    assert 'cannot get resource "pods/log"' in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["create", "delete", "list"])
def test_a_missing_required_permission_fails_at_once_naming_it(
    k8s: Emulator, tmp_path: Path, verb: str
) -> None:
    k8s.grant(docs_role().without(verb, *JOBSETS))
    k8s.script(run_forever)
    before = len(k8s.requests)
    with pytest.raises(Exception) as raised:
        if verb == "delete":
            CLUSTER.hook().create_jobset(manifest())
            CLUSTER.hook().delete_jobset("train-0123456789", "default")
        else:
            run(k8s, tmp_path, manifest())
    message = explain(raised.value) if hasattr(raised.value, "status") else str(raised.value)
    assert f"the identity lacks `{verb}` on `jobsets.jobset.x-k8s.io` in namespace default" in (
        message
    )
    assert sum(r.status == 403 for r in k8s.requests[before:]) == 1  # no retry loop
