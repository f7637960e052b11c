#!/usr/bin/env bash
# Docker Compose v2 for the docker CLI, where it has none: built from its Go module at the
# version of versions.env (no binary is downloaded), once per machine, into
# ~/.cache/airflow-provider-jax/compose/ (about 3 to 24 minutes on 2 cores, with warm or
# empty Go caches), then installed as the CLI plugin `docker compose` (machine-wide as root,
# else in ~/.docker/cli-plugins). A Compose v2 already there is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/airflow-provider-jax/compose
log() { printf '[compose-plugin] %s\n' "$*" >&2; }

if docker compose version 2>/dev/null | grep -q ' v2\.'; then
  exit 0
fi
command -v go >/dev/null || { log "building Docker Compose $COMPOSE_VERSION needs Go"; exit 1; }
ldflags="-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION"
built="$cache/$COMPOSE_VERSION-$(printf '%s' "$ldflags" | sha1sum | cut -c1-8)/docker-compose"
if [ ! -x "$built" ]; then
  log "building Docker Compose $COMPOSE_VERSION from its Go module (once per machine)"
  tmp=$(mktemp -d)
  (cd "$tmp" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false" GOBIN="$tmp" \
    nice -n 10 go install -ldflags "$ldflags" "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION")
  mkdir -p "$(dirname "$built")"
  mv "$tmp/cmd" "$built"
  rm -rf "$tmp"
fi
if [ "$(id -u)" = 0 ]; then plugins=/usr/local/lib/docker/cli-plugins; else plugins=$HOME/.docker/cli-plugins; fi
mkdir -p "$plugins"
cp "$built" "$plugins/.docker-compose.partial" && mv "$plugins/.docker-compose.partial" "$plugins/docker-compose"
log "installed $("$plugins/docker-compose" version) as $plugins/docker-compose"
