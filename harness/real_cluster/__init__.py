"""A real Kubernetes control plane for the tests (kube-apiserver, etcd, kube-controller-manager,
the JobSet controller, Kueue, and a fake kubelet), built from pinned Go modules."""
