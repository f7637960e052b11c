"""Who is who on the control plane: one CA and the certificates issued from it, the
service-account keys, and a static token (with a kubeconfig) per identity.

The controllers run out of cluster as cluster admins, as a kind or minikube cluster's do; the
test identities get only what RBAC grants them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from harness.real_cluster.api import Api
from harness.real_cluster.pki import Authority, Pair, service_account_keys

# token name -> (user, groups)
IDENTITIES = {
    "admin": ("admin", ("system:masters",)),
    "controllers": ("system:kube-controller-manager", ("system:masters",)),
    "airflow": ("airflow-jax", ()),
    "nobody": ("nobody", ()),
    # The cluster's own, with the roles Kubernetes bootstraps for them.
    "scheduler": ("system:kube-scheduler", ()),
    "kube-proxy": ("system:kube-proxy", ()),
}


def node_identities(nodes: Iterable[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each node's kubelet identity, ``node-<name>``: the user the Node authorizer and the
    ``NodeRestriction`` admission know as that node's kubelet."""
    return {f"node-{name}": (f"system:node:{name}", ("system:nodes",)) for name in nodes}


def make_identities(
    directory: Path,
    url: str,
    kubeconfig: Callable[[str], Path],
    host_ip: str,
    nodes: Iterable[str] = (),
) -> tuple[Authority, dict[str, Pair], dict[str, str]]:
    """The CA, the certificates, and each identity's token (``pki/tokens.csv``, one
    ``<identity>.kubeconfig`` each, at ``kubeconfig(identity)``), the nodes' kubelets' too.
    ``host_ip``: the address the API server listens on (its certificate names it)."""
    pki = directory / "pki"
    authority = Authority(pki)
    identities = {**IDENTITIES, **node_identities(nodes)}
    certs = {
        "apiserver": authority.issue(
            "apiserver",
            common_name="kube-apiserver",
            dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"),
            ips=("127.0.0.1", host_ip, "10.0.0.1"),
        ),
        "apiserver-kubelet-client": authority.issue(
            "apiserver-kubelet-client", common_name="kube-apiserver-kubelet-client",
            organizations=("system:masters",), client=True,
        ),
        "front-proxy-client": authority.issue(
            "front-proxy-client", common_name="front-proxy-client", client=True
        ),
        "sa": service_account_keys(pki),
    }  # fmt: skip
    tokens = {identity: f"{identity}-{os.urandom(12).hex()}" for identity in identities}
    lines = [
        f'{tokens[i]},{user},{user},"{",".join(groups)}"'
        for i, (user, groups) in identities.items()
    ]
    (pki / "tokens.csv").write_text("\n".join(lines) + "\n")
    for identity, token in tokens.items():
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "real", "cluster": {
                "server": url, "certificate-authority": str(authority.cert)}}],
            "users": [{"name": identity, "user": {"token": token}}],
            "contexts": [{"name": identity, "context": {
                "cluster": "real", "user": identity, "namespace": "default"}}],
            "current-context": identity,
        }  # fmt: skip
        kubeconfig(identity).write_text(yaml.safe_dump(config))
        (pki / f"{identity}.token").write_text(token)
    return authority, certs, tokens


def grant(api: Api, role: dict[str, Any]) -> None:
    """Bind ``role`` (a Role in ``default``, such as one of the docs') to the ``airflow``
    identity's user through ``api`` (an admin's), replacing what was granted under its name."""
    name = role["metadata"]["name"]
    base = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": "default"},
        "subjects": [{"kind": "User", "name": IDENTITIES["airflow"][0],
                      "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }  # fmt: skip
    for kind, body in (("roles", role), ("rolebindings", binding)):
        path = f"{base}/{kind}/{name}?fieldManager=test&force=true"
        api.request("PATCH", path, body, "application/apply-patch+yaml")


def grant_pods(api: Api, role: dict[str, Any]) -> str:
    """Apply ``role`` (in ``default``, such as the docs' for JobSet's in-place restart agent)
    and bind it to the pods' service account there; its name, to revoke it with."""
    name = role["metadata"]["name"]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": "default"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }  # fmt: skip
    for obj in (role, binding):
        api.apply(obj)
    return name


def connection(kubeconfig: Path) -> str:
    """An ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` value for this kubeconfig, naming the image of
    JobSet's in-place restart agent that the cluster's nodes hold (as a platform team sets
    it: docs/recovery.md)."""
    from harness.real_cluster.images import AGENT_IMAGE

    extra = {"kube_config_path": str(kubeconfig), "in_place_restart_agent_image": AGENT_IMAGE}
    return json.dumps({"conn_type": "kubernetes", "extra": extra})
