#!/usr/bin/env bash
# The Debian packages the tests use, installed where this user can (root with apt-get), else
# a failure that names them: a test never skips because one is missing.
#   check: docker-compose (validates docker-compose.yaml; no Docker engine is needed)
#   test:  that, PostgreSQL (the running-Airflow tests' metadata DB), Chromium and its driver
#          (the UI tests, headless), what the real cluster's nodes run on: containerd and
#          runc (each node's container runtime), the CNI plugins (its pods' bridge), iptables
#          and iproute2 (kube-proxy, the nodes' network), mmdebstrap (the images' Debian root)
#          and gcc (the pod sandbox's pause binary, from the Kubernetes module's C source),
#          and for the compose stack's tests a Docker engine (docker.io; mmdebstrap makes
#          the stand-in images, tools/compose-images); and room for the real nodes' inotify
#          instances (fs.inotify.max_user_instances, raised to 512 where this user can)
#          and br_netfilter (the nodes' pod bridges pass iptables; loaded where this user can)
# Go (the JobSet CRD for manifest checks, and the real control plane) is checked too; with it,
# `test` builds Docker Compose v2 where the docker CLI has none (tools/compose-images).
set -euo pipefail
tier=${1:-test}
missing=()
command -v docker-compose >/dev/null || missing+=(docker-compose)
if [ "$tier" = test ]; then
  compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
  command -v chromium >/dev/null || missing+=(chromium)
  command -v chromedriver >/dev/null || missing+=(chromium-driver)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} (Debian packages the tests use)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") \
      >/dev/null 2>&1 || { echo "could not install ${missing[*]}: install them, then run make $tier again" >&2; exit 1; }
  else
    echo "make $tier needs these Debian packages: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi
if ! command -v go >/dev/null; then
  echo "make $tier needs Go 1.25+ (the JobSet CRD comes from its pinned Go module): https://go.dev/dl or apt-get install golang-go" >&2
  exit 1
fi
if [ "$tier" = test ]; then
  # Each real node's kubelet and containerd hold inotify instances (about 8 a node), and the
  # suite's cluster, a docs block's `make cluster WORKERS=2` (three clusters) and the compose
  # stack's Docker engine run at once: more than Linux's default 128 a user. kind's docs ask
  # for 512 for its nodes (kind.sigs.k8s.io/docs/user/known-issues, "Pod errors due to too
  # many open files"); raised where this user can (root), never lowered. Where it cannot be
  # (not root, a read-only /proc/sys) the run goes on, told so: the harness refuses a node
  # that would not fit, naming what holds the instances.
  instances=$(cat /proc/sys/fs/inotify/max_user_instances)
  if [ "$instances" -lt 512 ]; then
    if [ "$(id -u)" = 0 ] && echo 512 2>/dev/null >/proc/sys/fs/inotify/max_user_instances; then
      echo "raised fs.inotify.max_user_instances from $instances to 512 (kind's figure; the real nodes hold them)" >&2
    else
      echo "warning: fs.inotify.max_user_instances is $instances; the real-cluster tests need 512 (sudo sysctl -w fs.inotify.max_user_instances=512)" >&2
    fi
  fi
  # A pod that reaches a Service on its own node goes through the node's pod bridge, and
  # kube-proxy's rules see it only when bridged traffic passes iptables: the br_netfilter
  # module (kubeadm's and kind's prerequisite too). Loaded where this user can; else told.
  if [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
    if [ "$(id -u)" = 0 ] && modprobe br_netfilter 2>/dev/null; then
      echo "loaded the br_netfilter kernel module (the real nodes' pod bridges pass iptables)" >&2
    else
      echo "warning: the br_netfilter kernel module is not loaded; the real-cluster tests need it (sudo modprobe br_netfilter)" >&2
    fi
  fi
  bash tools/compose-images/compose-plugin.sh ||
    { echo "make test needs Docker Compose v2 (docker compose): building it failed" >&2; exit 1; }
fi
