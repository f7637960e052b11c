"""What a pod's process is given: its env (as a kubelet builds it) and its ``/etc/hosts`` (the
DNS names of its JobSet's pods, all on loopback here)."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from airflow_provider_jax.backends.local.pods import resolve_env


async def container_env(
    core: client.CoreV1Api, pod: dict[str, Any], container: dict[str, Any]
) -> dict[str, str]:
    """The env a kubelet gives the container: values, fieldRefs and Secrets, expanded."""
    meta = pod["metadata"]
    fields = {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"],
              "metadata.uid": meta["uid"], "spec.nodeName": pod["spec"].get("nodeName", ""),
              "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1"}  # fmt: skip
    env_items = []
    for item in container.get("env", []):
        path = (item.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        if path in fields:
            item = {"name": item["name"], "value": fields[path]}
        env_items.append(item)
    secrets: dict[str, dict[str, str]] = {}
    names = [s["secretRef"]["name"] for s in container.get("envFrom", []) if "secretRef" in s]
    names += [i["valueFrom"]["secretKeyRef"]["name"] for i in env_items
              if "secretKeyRef" in (i.get("valueFrom") or {})]  # fmt: skip
    for name in names:
        secret = await core.read_namespaced_secret(name, meta["namespace"])
        secrets[name] = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    return resolve_env(
        {**container, "env": env_items}, meta.get("labels", {}), meta.get("annotations", {}),
        secrets.__getitem__,
    )  # fmt: skip


def hosts_file(pod: dict[str, Any], pods: Iterable[dict[str, Any]], folder: Path) -> Path:
    """``/etc/hosts`` for the pod: every pod DNS name of its JobSet, on loopback."""
    names = {"localhost", pod["spec"].get("hostname") or pod["metadata"]["name"]}
    subdomain = pod["spec"].get("subdomain")
    jobset = pod["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name")
    for other in pods:
        if jobset and other["metadata"].get("labels", {}).get(
            "jobset.sigs.k8s.io/jobset-name"
        ) == jobset and (host := other["spec"].get("hostname")):  # fmt: skip
            names.add(host)
    ns = pod["metadata"]["namespace"]
    entries = set()
    for host in names:
        entries.add(host)
        if subdomain and host != "localhost":
            entries |= {f"{host}.{subdomain}", f"{host}.{subdomain}.{ns}.svc",
                        f"{host}.{subdomain}.{ns}.svc.cluster.local"}  # fmt: skip
    path = folder / "hosts"
    path.write_text("127.0.0.1 " + " ".join(sorted(entries)) + "\n::1 localhost\n")
    return path
