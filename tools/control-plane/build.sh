#!/usr/bin/env bash
# Build the real test cluster from pinned Go modules (versions.env): the control plane (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, the JobSet controller, its in-place
# restart agent, Kueue) and its nodes' parts (kubelet, kube-proxy, kubectl, CoreDNS with only
# the plugins a cluster's DNS needs, the sandbox's pause binary from the Kubernetes module's
# C source, and the accelerator device plugin of tools/device-plugin). Each binary is
# built once and cached under $CONTROL_PLANE_CACHE/<name>-<version>-<flags hash>/ (the repo's
# ignored .cache/), so a second run is a no-op, and a change of a component's flags rebuilds
# that component only. Each build is also kept in a per-user cache under the same key
# ($CONTROL_PLANE_SHARED_CACHE), from which a fresh clone on the same machine (CI's) copies it.
# No binary is downloaded: everything is compiled from the Go module proxy's sources.
#
#   build.sh [COMPONENT...]   build what is missing (default: all)
#   build.sh --where          print NAME=PATH for every component (builds nothing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${CONTROL_PLANE_CACHE:-$root/.cache/control-plane}
shared=${CONTROL_PLANE_SHARED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airflow-provider-jax/control-plane}
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false"
ldflags="-s -w"
k8s_minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)

log() { printf '[control-plane build] %s\n' "$*" >&2; }

version_of() {
  case $1 in
    etcd) echo "$ETCD_VERSION" ;;
    kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kubectl | pause)
      echo "$KUBERNETES_VERSION" ;;
    jobset | in-place-restart-agent) echo "$JOBSET_VERSION" ;;
    kueue) echo "$KUEUE_VERSION" ;;
    coredns) echo "$COREDNS_VERSION" ;;
    # Ours: keyed by its sources.
    device-plugin) echo "src-$(cat "$root"/tools/device-plugin/{go.mod,go.sum,main.go} | sha1sum | cut -c1-12)" ;;
    *) echo "unknown component: $1" >&2; exit 2 ;;
  esac
}

# The -X flags each component is built with.
flags_of() {
  case $1 in
    # Without a version, /version reports v0.0.0-master, and Kueue refuses to start.
    kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kubectl)
      echo "-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION" \
        "-X k8s.io/component-base/version.gitMajor=1" \
        "-X k8s.io/component-base/version.gitMinor=$k8s_minor" \
        "-X k8s.io/component-base/version.gitTreeState=clean" ;;
    jobset) echo "-X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION" ;;
    # Kueue's visibility server reads its certificate from a hard-coded /visibility/tls.{crt,key}
    # (pkg/visibility/server.go, a package-level var): point it at a folder relative to
    # Kueue's working directory instead, so nothing is written outside the run's folder.
    kueue)
      echo "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
        "-X sigs.k8s.io/kueue/pkg/visibility.certDir=$KUEUE_VISIBILITY_CERT_DIR" ;;
    # Not linker flags: what else makes these builds, in their cache key.
    coredns) echo "plugins: $COREDNS_PLUGINS" ;;
    pause) echo "$PAUSE_CFLAGS" ;;
    *) echo "" ;;
  esac
}

# CoreDNS with only what a cluster's DNS needs (the kubernetes plugin for Services and pods;
# no forward: names outside the cluster get no answer). Its plugin chain runs in CoreDNS's own
# directive order whatever the order here.
COREDNS_PLUGINS="bind cache errors health kubernetes log ready"
PAUSE_CFLAGS="-Os -Wall -Werror -static"

dir_of() {
  local hash
  hash=$(printf '%s' "$ldflags $(flags_of "$1")" | sha1sum | cut -c1-8)
  echo "$cache/$1-$(version_of "$1")-$hash"
}

# build_in_context NAME MODULE PACKAGE: build in a generated module context (context.py):
# a main module that requires MODULE at its pinned version and, where MODULE's own go.mod
# replaces its siblings with local folders (Kubernetes' staging modules, etcd's api/client/
# pkg), replaces them with their published versions instead.
build_in_context() {
  local name=$1 module=$2 pkg=$3 version out
  version=$(version_of "$name")
  out=$(dir_of "$name")
  local ctx="$cache/.ctx-${module//\//_}-$version"
  if [ ! -f "$ctx/go.mod" ]; then
    local gomod
    gomod=$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "$module@$version" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    python3 "$here/context.py" "$module" "$version" "$gomod" "$ctx"
  fi
  (cd "$ctx" && go get "$pkg@$version")
  mkdir -p "$out"
  (cd "$ctx" && go build -ldflags "$ldflags $(flags_of "$name")" -o "$out/$name" "$pkg")
}

# go_install NAME MODULE PACKAGE: a module whose go.mod has no replace lines.
# `go install PACKAGE@VERSION` first; the proxy refuses some modules' version lists
# (sigs.k8s.io/jobset's @v/list answers 403), which go install reads to check for a
# deprecation notice and then fails, so fall back to the same pinned version built in a
# module context of its own.
go_install() {
  local name=$1 module=$2 pkg=$3 version out
  version=$(version_of "$name")
  out=$(dir_of "$name")
  local tmp="$cache/.tmp-$name"
  rm -rf "$tmp" && mkdir -p "$tmp/bin"
  if (cd "$tmp" && GOBIN="$tmp/bin" go install -ldflags "$ldflags $(flags_of "$name")" "$pkg@$version"); then
    mkdir -p "$out" && mv "$tmp"/bin/* "$out/$name" && rm -rf "$tmp"
    return 0
  fi
  rm -rf "$tmp"
  log "go install refused $pkg@$version; building it in a module context that requires $module $version"
  build_in_context "$name" "$module" "$pkg"
}

# build_coredns: a main package that links CoreDNS's server with COREDNS_PLUGINS only (its own
# coredns.go links every plugin it has), in a module context that requires the pinned release.
build_coredns() {
  local version out ctx plugin
  version=$(version_of coredns)
  out=$(dir_of coredns)
  ctx="$cache/.ctx-coredns-$version"
  mkdir -p "$ctx"
  printf 'module controlplane/coredns\n\ngo 1.26.0\n\nrequire github.com/coredns/coredns %s\n' \
    "$version" >"$ctx/go.mod"
  {
    echo "package main"
    echo 'import "github.com/coredns/coredns/coremain"'
    for plugin in $COREDNS_PLUGINS; do echo "import _ \"github.com/coredns/coredns/plugin/$plugin\""; done
    echo "func main() { coremain.Run() }"
  } >"$ctx/main.go"
  (cd "$ctx" && GOFLAGS="$GOFLAGS -mod=mod" go mod tidy && go build -ldflags "$ldflags" -o "$out/coredns" .)
}

# build_pause: the pod sandbox's process, compiled from the Kubernetes module's own C source
# (build/pause/linux/pause.c) as its Makefile compiles it, static.
build_pause() {
  local dir tag out
  dir=$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  tag=$(sed -n 's/^TAG ?= //p' "$dir/build/pause/Makefile")
  out=$(dir_of pause)
  mkdir -p "$out"
  # shellcheck disable=SC2086
  gcc $PAUSE_CFLAGS "-DVERSION=v$tag-$KUBERNETES_VERSION" -o "$out/pause" "$dir/build/pause/linux/pause.c"
  echo "$tag" >"$out/pause.tag"
}

all="etcd kube-apiserver kube-controller-manager kube-scheduler jobset in-place-restart-agent kueue \
  kubelet kube-proxy kubectl coredns pause device-plugin"
if [ "${1:-}" = "--where" ]; then
  for component in $all; do echo "$component=$(dir_of "$component")/$component"; done
  exit 0
fi
# shared_copy FROM TO NAME: copy a built binary between the caches (same key on both sides).
shared_copy() {
  [ -x "$1/$3" ] || return 1
  mkdir -p "$2"
  # What a build keeps beside its binary (pause's tag) goes first: the binary marks it done.
  for extra in "$1/$3".*; do [ -e "$extra" ] && cp "$extra" "$2/"; done
  cp "$1/$3" "$2/.$3.partial" && mv "$2/.$3.partial" "$2/$3"
}

mkdir -p "$cache"
for component in ${*:-$all}; do
  built=$(dir_of "$component")
  kept="$shared/$(basename "$built")"
  if [ -x "$built/$component" ]; then
    [ -x "$kept/$component" ] || shared_copy "$built" "$kept" "$component" || true
    continue
  fi
  if shared_copy "$kept" "$built" "$component"; then
    log "$component $(version_of "$component"): copied from $kept"
    continue
  fi
  log "building $component $(version_of "$component")"
  case $component in
    etcd) build_in_context etcd go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 ;;
    kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kubectl)
      build_in_context "$component" k8s.io/kubernetes "k8s.io/kubernetes/cmd/$component" ;;
    jobset) go_install jobset sigs.k8s.io/jobset sigs.k8s.io/jobset ;;
    # JobSet's in-place restart sidecar (KEP-467): the fake kubelet runs it in each pod.
    in-place-restart-agent)
      go_install in-place-restart-agent sigs.k8s.io/jobset sigs.k8s.io/jobset/cmd/in-place-restart-agent ;;
    kueue) go_install kueue sigs.k8s.io/kueue sigs.k8s.io/kueue/cmd/kueue ;;
    coredns) build_coredns ;;
    pause) build_pause ;;
    device-plugin)
      mkdir -p "$built" && (cd "$root/tools/device-plugin" && go build -ldflags "$ldflags" -o "$built/device-plugin" .) ;;
    *) echo "unknown component: $component" >&2; exit 2 ;;
  esac
  shared_copy "$built" "$kept" "$component" || true
done
log "ready in $cache"
