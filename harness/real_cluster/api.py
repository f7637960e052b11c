"""Just enough of the Kubernetes API for starting the control plane (the tests themselves use
the real ``kubernetes`` clients): server-side apply, and waiting on conditions."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness.real_cluster.components import ControlPlaneError

FIELD_MANAGER = "airflow-provider-jax-test-control-plane"


def resource_path(obj: dict[str, Any]) -> str:
    """The REST path of ``obj`` (the kinds the control plane applies)."""
    group_version, kind = obj["apiVersion"], obj["kind"]
    plural = {
        "CustomResourceDefinition": "customresourcedefinitions",
        "Namespace": "namespaces",
        "Service": "services",
        "APIService": "apiservices",
        "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
        "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
        "Role": "roles",
        "RoleBinding": "rolebindings",
        "Secret": "secrets",
        "EndpointSlice": "endpointslices",
        # Kueue's, for queues and MultiKueue (harness/real_cluster/multikueue.py)
        "ResourceFlavor": "resourceflavors",
        "ClusterQueue": "clusterqueues",
        "LocalQueue": "localqueues",
        "AdmissionCheck": "admissionchecks",
        "MultiKueueCluster": "multikueueclusters",
        "MultiKueueConfig": "multikueueconfigs",
    }[kind]
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    namespace = obj["metadata"].get("namespace")
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{where}/{plural}/{obj['metadata']['name']}"


class Api:
    def __init__(self, url: str, identity: str, ca: Path) -> None:
        self.url = url
        self.token = (ca.parent / f"{identity}.token").read_text()
        self.context = ssl.create_default_context(cafile=str(ca))

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=30, context=self.context) as response:
            return json.loads(response.read() or b"null")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def delete(self, path: str, body: Any = None) -> bool:
        """DELETE ``path``; False when it was already gone (404), as a controller's own
        deletion may have finished between a list and this call."""
        try:
            self.request("DELETE", path, body)
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return False
            raise
        return True

    def apply(self, obj: dict[str, Any]) -> Any:
        """Server-side apply (the CRDs are too large for a client-side apply's annotation)."""
        path = f"{resource_path(obj)}?fieldManager={FIELD_MANAGER}&force=true"
        try:
            return self.request("PATCH", path, obj, "application/apply-patch+yaml")
        except urllib.error.HTTPError as err:
            raise ControlPlaneError(
                f"applying {obj['kind']} {obj['metadata']['name']} failed: HTTP {err.code} "
                f"{err.read().decode(errors='replace')[:2000]}"
            ) from err

    def wait_for(self, what: str, check: Any, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise ControlPlaneError(f"{what} did not happen within {timeout:.0f} s")

    def wait_established(self, crd: str) -> None:
        def established() -> bool:
            conditions = (
                self.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
                .get("status", {})
                .get("conditions")
            ) or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

        self.wait_for(f"CRD {crd} Established", established)

    def wait_apiservices_available(self, timeout: float = 60.0) -> None:
        def available() -> bool:
            items = self.get("/apis/apiregistration.k8s.io/v1/apiservices")["items"]
            return all(
                any(c["type"] == "Available" and c["status"] == "True"
                    for c in s.get("status", {}).get("conditions", []))
                for s in items
            )  # fmt: skip

        try:
            self.wait_for("every APIService Available", available, timeout)
        except ControlPlaneError:
            items = self.get("/apis/apiregistration.k8s.io/v1/apiservices")["items"]
            down = {
                s["metadata"]["name"]: [c.get("message") for c in s.get("status", {}).get(
                    "conditions", []) if c["status"] != "True"]
                for s in items
            }  # fmt: skip
            raise ControlPlaneError(
                f"APIServices not Available: { {k: v for k, v in down.items() if v} }"
            ) from None

    def nodes_ready(self) -> bool:
        try:
            nodes = self.get("/api/v1/nodes")["items"]
        except (urllib.error.URLError, OSError):
            return False
        return bool(nodes) and all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions") or []
            )
            for n in nodes
        )
