"""The Role that ``docs/kubernetes.md`` publishes, on the real RBAC authorizer: bound to a test
identity, it is enough for a queued job's whole life; without each optional permission the job
still succeeds, as the docs' table says."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from harness.k8s_emulator.rbac import docs_role_manifest
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.identities import connection, grant
from tests.support.real_cluster_jobs import gated, logger

OPTIONAL = {  # (group, resource, verb) -> the task log line the docs promise without it
    ("jobset.x-k8s.io", "jobsets", "watch"): None,  # polls with list instead, silently
    (
        "",
        "pods/log",
        "get",
    ): "Stopped streaming the pods' logs: the identity lacks `get` on `pods/log`",
    ("", "events", "list"): None,  # read only while a pod is Unschedulable
    ("kueue.x-k8s.io", "workloads", "watch"): None,
    ("visibility.kueue.x-k8s.io", "localqueues/pendingworkloads", "get"): (
        "queue position not shown: the identity lacks `get` on "
        "`localqueues.visibility.kueue.x-k8s.io/pendingworkloads`"
    ),
}


def without(role: dict[str, Any], group: str, resource: str, verb: str) -> dict[str, Any]:
    role = copy.deepcopy(role)
    for rule in role["rules"]:
        if group in rule["apiGroups"] and resource in rule["resources"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    role["rules"] = [r for r in role["rules"] if r["verbs"]]
    return role


@pytest.fixture
def as_airflow(real_cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> ControlPlane:
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", connection(real_cluster.kubeconfig("airflow"))
    )
    return real_cluster


def life(name: str, tmp_path: Path) -> list[str]:
    """A queued job's whole life as the test identity: its log lines."""
    log, lines = logger(name)
    gate = tmp_path / f"{name}-gate"
    gate.touch()  # it returns at once
    thread, out = gated(name, gate, log, priority="high")
    thread.join(120)
    assert not isinstance(out.get("value"), BaseException), out
    assert out["value"].result["processes"] == 2
    return lines.lines


def test_the_docs_role_is_enough_for_a_queued_jobs_whole_life(queues, as_airflow, tmp_path):
    grant(as_airflow.api(), docs_role_manifest())
    lines = life("docs-role", tmp_path)
    assert any("Queue: admitted by Kueue" in line for line in lines), lines
    assert not [line for line in lines if "lacks" in line], lines


@pytest.mark.parametrize("permission", sorted(OPTIONAL), ids=lambda p: f"{p[2]}-{p[1]}")
def test_each_optional_permission_is_optional(permission, queues, as_airflow, tmp_path):
    grant(as_airflow.api(), without(docs_role_manifest(), *permission))
    lines = life(re.sub(r"[^a-z]+", "-", f"no-{permission[2]}-{permission[1]}"), tmp_path)
    said = [line for line in lines if "lacks" in line]
    promised = OPTIONAL[permission]
    assert all(promised and promised in line for line in said), said
    if permission[1] == "pods/log":  # always streamed, so always said (the others only
        assert said, lines  # matter while a Workload waits or a pod cannot be scheduled)
