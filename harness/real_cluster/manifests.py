"""The JobSet and Kueue objects that a real install applies, read from the pinned Go modules'
own ``config/components`` and adapted for a control plane on loopback: each webhook's
``clientConfig.service`` becomes ``url: https://127.0.0.1:<port><path>`` with our CA as its
``caBundle``, the kustomize patches those folders apply are applied here too, and names get
the prefix kustomize would give them (both projects call theirs ``*-webhook-configuration``).
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml


def module_dir(module: str, version: str) -> Path:
    """Where the Go module cache holds ``module@version`` (downloaded if it is not there)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    return Path(json.loads(out.stdout)["Dir"])


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _kustomization(folder: Path) -> dict[str, Any]:
    return yaml.safe_load((folder / "kustomization.yaml").read_text()) or {}


def _ca_bundle(ca: Path) -> str:
    return base64.b64encode(ca.read_bytes()).decode()


def crds(root: Path, *, webhook_port: int, ca: Path) -> list[dict[str, Any]]:
    """The module's CRDs; those its kustomization gives a conversion webhook get one at
    ``https://127.0.0.1:<webhook_port>/convert``."""
    folder = root / "config/components/crd"
    kustomization = _kustomization(folder)
    objects = [d for r in kustomization.get("resources", []) for d in _docs(folder / r)]
    converted = set()
    for patch in kustomization.get("patches") or []:
        path = patch.get("path", "") if isinstance(patch, dict) else ""
        if "webhook_in_" in path:
            converted.add(_docs(folder / path)[0]["metadata"]["name"])
    for crd in objects:
        if crd["metadata"]["name"] in converted:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{webhook_port}/convert",
                        "caBundle": _ca_bundle(ca),
                    },
                    "conversionReviewVersions": ["v1"],
                },
            }
    return objects


def _json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """RFC 6902 ``replace``/``add``/``remove`` on plain paths (what these patches use)."""
    for op in ops:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        key: Any = int(last) if isinstance(target, list) and last != "-" else last
        if op["op"] == "remove":
            del target[key]
        elif isinstance(target, list) and op["op"] == "add":
            target.insert(len(target) if key == "-" else key, op["value"])
        else:
            target[key] = op["value"]


def _merge_by_name(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    """A strategic-merge patch of a webhook configuration: webhooks merge by ``name``."""
    by_name = {w["name"]: w for w in doc.get("webhooks", [])}
    for webhook in patch.get("webhooks", []):
        if webhook["name"] in by_name:
            by_name[webhook["name"]].update(copy.deepcopy(webhook))


def webhook_configurations(
    root: Path, *, prefix: str, port: int, ca: Path, served: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The module's admission webhook configurations, pointed at ``127.0.0.1:<port>``.

    With ``served`` (substrings of webhook paths), only those webhooks are kept: Kueue
    registers a handler only for the integrations its configuration enables, and a webhook
    whose handler is missing panics on every call (a Job create fails with
    ``admission webhook "mjob.kb.io" denied the request: panic``)."""
    folder = root / "config/components/webhook"
    kustomization = _kustomization(folder)
    objects = [
        d for d in _docs(folder / "manifests.yaml") if d["kind"].endswith("WebhookConfiguration")
    ]
    by_name = {d["metadata"]["name"]: d for d in objects}
    for patch in kustomization.get("patches") or []:
        if "path" in patch:
            target = by_name[patch["target"]["name"]]
            _json_patch(target, yaml.safe_load((folder / patch["path"]).read_text()))
        elif "patch" in patch:
            body = yaml.safe_load(patch["patch"])
            _merge_by_name(by_name[body["metadata"]["name"]], body)
    for doc in objects:
        if served is not None:
            doc["webhooks"] = [
                w for w in doc["webhooks"]
                if any(part in w["clientConfig"]["service"]["path"] for part in served)
            ]  # fmt: skip
        doc["metadata"]["name"] = f"{prefix}-{doc['metadata']['name']}"
        for webhook in doc["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": _ca_bundle(ca),
            }
    return objects


def visibility_apiservices(root: Path, *, port: int, ca: Path) -> list[dict[str, Any]]:
    """Kueue's visibility APIServices, verified against our CA instead of skipping TLS. The
    aggregator reaches them through an ExternalName Service (see :func:`visibility_service`)."""
    folder = root / "config/components/visibility"
    out = []
    for path in sorted(folder.glob("apiservice_*.yaml")):
        doc = _docs(path)[0]
        doc["spec"].pop("insecureSkipTLSVerify", None)
        doc["spec"]["caBundle"] = _ca_bundle(ca)
        doc["spec"]["service"]["port"] = port
        out.append(doc)
    return out


def visibility_service(root: Path) -> dict[str, Any]:
    """Kueue's visibility Service as an ExternalName for ``localhost``: the aggregator then
    dials ``localhost:<APIService port>`` (a ClusterIP would need kube-proxy, and Endpoints
    may not hold loopback addresses)."""
    doc = _docs(root / "config/components/visibility/service.yaml")[0]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": doc["metadata"]["name"], "namespace": doc["metadata"]["namespace"]},
        "spec": {"type": "ExternalName", "externalName": "localhost"},
    }


def service_dns_names(service: dict[str, Any]) -> tuple[str, ...]:
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    return (f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local")
