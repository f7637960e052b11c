"""What ``kubectl version`` / ``get crd`` / ``get apiservice`` / ``get nodes`` would show on the
real cluster: the pinned Kubernetes version, the JobSet and Kueue CRDs, Kueue's visibility API
served through the aggregator, and the real nodes Ready: kubelets of the pinned version on
containerd, with GKE's labels and taints and their accelerators advertised by the device
plugin."""

from __future__ import annotations

from harness.real_cluster.build import versions
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.nodes import NODES


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


def test_the_nodes_are_real_kubelets_as_gke_labels_and_taints_them(real_cluster: ControlPlane):
    nodes = {n["metadata"]["name"]: n for n in real_cluster.api().get("/api/v1/nodes")["items"]}
    assert set(nodes) == {n.name for n in NODES}
    for spec in NODES:
        node = nodes[spec.name]
        info = node["status"]["nodeInfo"]
        assert info["kubeletVersion"] == versions()["KUBERNETES_VERSION"], info
        assert info["containerRuntimeVersion"].startswith("containerd://1.6."), info
        assert node["metadata"]["labels"].items() >= dict(spec.labels).items()
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == spec.name
        taints = [{k: t[k] for k in ("key", "value", "effect")} for t in node["spec"]["taints"]]
        assert taints == spec.taints, taints
        resource, count = spec.accelerator or (None, 0)
        assert node["status"]["allocatable"][resource] == str(count)
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses["InternalIP"] == real_cluster.cluster.nodes[spec.name].ip
