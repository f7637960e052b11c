"""Kubernetes Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-
standards/), the checks that apply to the pods we render: which rules of a level a pod spec
breaks, worded as the admission controller words them."""

from __future__ import annotations

from typing import Any

# Capabilities baseline allows a container to add.
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
}  # fmt: skip


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def baseline_violations(pod: dict[str, Any]) -> list[str]:
    found = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if pod.get(k)]
    found += [f"hostPath volume {v['name']!r}" for v in pod.get("volumes", []) if "hostPath" in v]
    if (pod.get("securityContext") or {}).get("seccompProfile", {}).get("type") == "Unconfined":
        found.append("seccompProfile Unconfined")
    for c in _containers(pod):
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            found.append(f"container {c['name']!r}: privileged")
        if added := set((sc.get("capabilities") or {}).get("add", [])) - BASELINE_CAPABILITIES:
            found.append(f"container {c['name']!r}: adds capabilities {sorted(added)}")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            found.append(f"container {c['name']!r}: hostPort")
        if sc.get("procMount", "Default") != "Default":
            found.append(f"container {c['name']!r}: procMount")
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            found.append(f"container {c['name']!r}: seccompProfile Unconfined")
    return found


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """Baseline's, and restricted's own, except ``runAsNonRoot``: that one depends on the
    image's user, which only its author knows (docs/security.md)."""
    found = baseline_violations(pod)
    found += [
        f"volume {v['name']!r} of a restricted type"
        for v in pod.get("volumes", [])
        if not (set(v) - {"name"}) <= RESTRICTED_VOLUMES
    ]
    pod_seccomp = (pod.get("securityContext") or {}).get("seccompProfile", {}).get("type")
    for c in _containers(pod):
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"container {c['name']!r}: allowPrivilegeEscalation != false")
        if "ALL" not in (sc.get("capabilities") or {}).get("drop", []):
            found.append(f"container {c['name']!r}: does not drop ALL capabilities")
        if set((sc.get("capabilities") or {}).get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"container {c['name']!r}: adds capabilities")
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"container {c['name']!r}: no RuntimeDefault/Localhost seccompProfile")
    return found
