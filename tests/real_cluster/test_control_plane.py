"""What ``kubectl version`` / ``get crd`` / ``get apiservice`` / ``get nodes`` would show on the
real control plane: the pinned Kubernetes version, the JobSet and Kueue CRDs, Kueue's
visibility API served through the aggregator, and the fake kubelet's Nodes ready."""

from __future__ import annotations

from harness.real_cluster.build import versions
from harness.real_cluster.control_plane import ControlPlane


def test_the_real_components_are_up_at_their_pinned_versions(real_cluster: ControlPlane):
    api = real_cluster.api()
    assert api.get("/version")["gitVersion"] == versions()["KUBERNETES_VERSION"]
    crds = {c["metadata"]["name"]: c for c in api.get(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]}  # fmt: skip
    assert {"jobsets.jobset.x-k8s.io", "workloads.kueue.x-k8s.io",
            "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"} <= set(crds)  # fmt: skip
    for crd in crds.values():
        assert any(c["type"] == "Established" and c["status"] == "True"
                   for c in crd["status"]["conditions"]), crd["metadata"]["name"]  # fmt: skip
    visibility = api.get(
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta2.visibility.kueue.x-k8s.io"
    )
    assert [c["status"] for c in visibility["status"]["conditions"]] == ["True"]
    assert api.nodes_ready()
    hooks = api.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations")
    assert {h["metadata"]["name"] for h in hooks["items"]} >= {
        "jobset-validating-webhook-configuration",
        "kueue-validating-webhook-configuration",
    }
