"""A real Kubernetes cluster for the tests and ``make cluster``: the control plane
(kube-apiserver, etcd, kube-controller-manager, kube-scheduler, the JobSet controller, Kueue)
and real nodes (kubelets with a containerd each, kube-proxy, CoreDNS), built from pinned Go
modules and Debian's packages; and the tpu7x cube's stand-in kubelet."""

import os

# What the nodes and their network run lives in sbin (runc, iptables, sysctl), which a Debian
# user's PATH lacks (a fresh shell's: tests/test_docs_commands.py): every process started from
# here finds it.
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")
_path = os.environ.get("PATH", "").split(os.pathsep)
os.environ["PATH"] = os.pathsep.join([*_path, *(d for d in SBIN if d not in _path)])
