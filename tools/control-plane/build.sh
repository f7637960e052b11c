#!/usr/bin/env bash
# Build the real test control plane from pinned Go modules (versions.env): etcd,
# kube-apiserver, kube-controller-manager, the JobSet controller and Kueue. Each binary is
# built once and cached under $CONTROL_PLANE_CACHE/<name>-<version>/, so a second run is a no-op.
# No binary is downloaded: everything is compiled from the Go module proxy's sources.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${CONTROL_PLANE_CACHE:-$root/.cache/control-plane}
mkdir -p "$cache"
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false"
ldflags="-s -w"

log() { printf '[control-plane build] %s\n' "$*" >&2; }

# have NAME VERSION: the cached binary exists.
have() { [ -x "$cache/$1-$2/$1" ]; }

# go_install NAME VERSION MODULE PACKAGE: a module whose go.mod has no replace lines.
# `go install PACKAGE@VERSION` first; the proxy refuses some modules' version lists
# (sigs.k8s.io/jobset's @v/list answers 403), which go install reads to check for a
# deprecation notice and then fails, so fall back to the same pinned version built in a
# module context of its own.
go_install() {
  local name=$1 version=$2 module=$3 pkg=$4
  have "$name" "$version" && return 0
  log "building $name $version (go install $pkg@$version)"
  local tmp="$cache/.tmp-$name-$version"
  rm -rf "$tmp" && mkdir -p "$tmp/bin"
  if (cd "$tmp" && GOBIN="$tmp/bin" go install -ldflags "$ldflags" "$pkg@$version"); then
    mkdir -p "$cache/$name-$version"
    mv "$tmp"/bin/* "$cache/$name-$version/$name"
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$tmp"
  log "go install refused $pkg@$version; building it in a module context that requires $module $version"
  go_build_replaced "$name" "$version" "$module" "$pkg"
}

# go_build_replaced NAME VERSION MODULE PACKAGE EXTRA_LDFLAGS: a module whose go.mod replaces
# its siblings with local folders; built in a generated module context (context.py).
go_build_replaced() {
  local name=$1 version=$2 module=$3 pkg=$4 extra=${5:-}
  have "$name" "$version" && return 0
  log "building $name $version ($pkg in a generated module context)"
  local ctx="$cache/.ctx-${module//\//_}-$version"
  if [ ! -f "$ctx/go.mod" ]; then
    local gomod
    gomod=$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "$module@$version" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    python3 "$here/context.py" "$module" "$version" "$gomod" "$ctx"
  fi
  (cd "$ctx" && go get "$pkg@$version")
  mkdir -p "$cache/$name-$version"
  (cd "$ctx" && go build -ldflags "$ldflags $extra" -o "$cache/$name-$version/$name" "$pkg")
}

k8s_minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
k8s_version_flags="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$k8s_minor \
-X k8s.io/component-base/version.gitTreeState=clean"

want=${*:-etcd kube-apiserver kube-controller-manager jobset kueue}
for component in $want; do
  case $component in
    etcd) go_build_replaced etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 ;;
    kube-apiserver | kube-controller-manager)
      go_build_replaced "$component" "$KUBERNETES_VERSION" k8s.io/kubernetes \
        "k8s.io/kubernetes/cmd/$component" "$k8s_version_flags" ;;
    jobset) go_install jobset "$JOBSET_VERSION" sigs.k8s.io/jobset sigs.k8s.io/jobset ;;
    kueue) go_install kueue "$KUEUE_VERSION" sigs.k8s.io/kueue sigs.k8s.io/kueue/cmd/kueue ;;
    *) echo "unknown component: $component" >&2; exit 2 ;;
  esac
done
log "ready in $cache"
