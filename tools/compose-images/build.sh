#!/usr/bin/env bash
# Stand-ins for the images docker-compose.yaml and the Dockerfile start from, for a machine
# that reaches no image registry (this project's CI): apache/airflow, postgres and redis,
# built offline and loaded into the Docker engine under the names the files use, so neither
# file changes for them. docs/docker-compose.md says how each differs from the real image.
#
# Each is a Debian root filesystem made by mmdebstrap from Debian's packages (<name>/packages),
# finished by <name>/customize.sh, and imported with `docker import` and the image settings of
# <name>/config. The airflow stand-in installs Airflow from wheels downloaded on this machine
# at the lock's versions (requirements/constraints.txt), and keeps them for the Dockerfile's
# own `pip install`: pip in the container cannot reach the package index.
#
# Cached once per machine: each root filesystem as a tarball in $COMPOSE_IMAGES_CACHE (default
# ~/.cache/airflow-provider-jax/compose-images), keyed by what it is made from; each image in
# the engine also as airflow-provider-jax/stand-in-<name>:<key>, so a second run is a no-op and
# an engine that lacks it gets it from the tarball in seconds. The newest two keys of each are
# kept (prune), so that checkouts of two branches with different locks do not rebuild in turn.
#
#   build.sh [NAME...]   build and load what is missing (default: airflow postgres redis)
#   build.sh --tags      print NAME=TAG for every stand-in (builds nothing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${COMPOSE_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airflow-provider-jax/compose-images}
constraints=$root/requirements/constraints.txt
image_requirements=$root/requirements/image.in
all="airflow postgres redis"

log() { printf '[compose-images] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The tags docker-compose.yaml and the Dockerfile name: read from them, one fact in one place.
dockerfile_arg() {
  sed -n "s/^ARG $1=\(.*\)$/\1/p" "$root/Dockerfile" | head -1
}
compose_image() {
  sed -n "s/^ *image: *\($1:[^ ]*\) *$/\1/p" "$root/docker-compose.yaml" | head -1
}
tag_of() {
  local tag
  case $1 in
    airflow) tag="apache/airflow:$(dockerfile_arg AIRFLOW_VERSION)-python$(dockerfile_arg PYTHON_VERSION)" ;;
    postgres | redis) tag=$(compose_image "$1") ;;
    *) die "unknown stand-in: $1" ;;
  esac
  [[ $tag =~ ^[a-z/]+:[0-9][^:]*$ ]] || die "cannot read the $1 image's tag from the Dockerfile or docker-compose.yaml (got '$tag')"
  echo "$tag"
}
airflow_version() { dockerfile_arg AIRFLOW_VERSION; }

# What the airflow stand-in installs, its version filled in.
requirements_of_airflow() {
  sed "s/@AIRFLOW_VERSION@/$(airflow_version)/" "$here/airflow/requirements.in"
}

# The key of a stand-in: everything its image is made from (of this script, the functions
# that make and import it: not its comments, not its bookkeeping).
key_of() {
  {
    echo "$DEBIAN_SUITE $DEBIAN_MIRROR $(tag_of "$1")"
    declare -f rootfs load download_wheels
    for f in "$here/$1"/*; do echo "${f##*/}"; cat "$f"; done
    if [ "$1" = airflow ]; then wheel_inputs; fi
  } | sha1sum | cut -c1-12
}

# The requirements the airflow image's wheels are downloaded for: the stand-in's own and, for
# the Dockerfile's install, the image's, this project's dependencies (with the local extra)
# and its build backend.
wheel_requirements() {
  requirements_of_airflow
  grep -v '^#' "$image_requirements"
  python3 - "$root/pyproject.toml" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))
for req in project["project"]["dependencies"] + project["project"]["optional-dependencies"]["local"]:
    print(req)
for req in project["build-system"]["requires"]:
    print(req)
PY
}

# What the wheels are: those requirements, at the lock's versions.
wheel_inputs() { wheel_requirements; cat "$constraints"; }

# download_wheels FOLDER: the wheels, from the package index, on this machine. uv resolves
# them within the lock for Python 3.11 as `make lock` does, so the set holds what a 3.11
# older than this machine's needs too (Debian's 3.11.2 needs async-timeout for redis); pip
# then downloads exactly those pins.
download_wheels() {
  local out=$1 reqs=$work/wheels.in pins=$work/wheels.txt
  [ -x "$root/.venv/bin/uv" ] || die "downloading the wheels needs the project's venv: make install"
  wheel_requirements >"$reqs"
  "$root/.venv/bin/uv" pip compile -q --python-version 3.11 --no-header --no-annotate \
    -c "$constraints" -o "$pins" "$reqs"
  rm -rf "$out.partial"
  log "downloading the airflow image's wheels (the lock's versions) into $out"
  "$root/.venv/bin/python" -m pip download --quiet --no-deps --only-binary=:all: \
    --dest "$out.partial" -r "$pins"
  mv "$out.partial" "$out"
}

# rootfs NAME TARBALL: the root filesystem of stand-in NAME, by mmdebstrap, as a tarball.
rootfs() {
  local name=$1 out=$2 hooks=() work
  work=$(mktemp -d)
  [ -f "$here/$name/essential.sh" ] && hooks+=(--essential-hook="$here/$name/essential.sh \"\$1\"")
  hooks+=(--customize-hook="$here/$name/customize.sh \"\$1\"")
  if [ "$name" = airflow ]; then
    export WHEELS="$cache/wheels-$(wheel_inputs | sha1sum | cut -c1-12)"
    [ -d "$WHEELS" ] || download_wheels "$WHEELS"
    export CONSTRAINTS=$constraints REQUIREMENTS=$work/requirements.txt
    requirements_of_airflow >"$REQUIREMENTS"
  fi
  log "building the $name root filesystem ($DEBIAN_SUITE, mmdebstrap)"
  nice -n 10 mmdebstrap --quiet --variant=minbase \
    --include="$(paste -sd, "$here/$name/packages")" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    "${hooks[@]}" "$DEBIAN_SUITE" "${out%.tar}.partial.tar" "$DEBIAN_MIRROR"
  mv "${out%.tar}.partial.tar" "$out"
  rm -rf "$work"
}

# size IMAGE: its size in bytes; 0 where the engine has none.
size() { docker image inspect --format '{{.Size}}' "$1" 2>/dev/null | grep -x '[0-9][0-9]*' || echo 0; }

# load NAME KEY TARBALL: import the root filesystem with the image settings of NAME/config.
load() {
  local name=$1 key=$2 tarball=$3 changes=() line
  while IFS= read -r line; do
    [ -n "$line" ] && changes+=(--change "${line//@AIRFLOW_VERSION@/$(airflow_version)}")
  done <"$here/$name/config"
  changes+=(--change "LABEL io.airflow-provider-jax.stand-in=$(tag_of "$name")")
  log "importing $tarball"
  docker import "${changes[@]}" "$tarball" "airflow-provider-jax/stand-in-$name:$key" >/dev/null
}

# prune NAME KEY: what older keys of stand-in NAME left, in the cache and in the engine, but
# the newest $keep (KEY, just used, among them): checkouts of other branches on this machine,
# with another lock, keep theirs instead of rebuilding them on every turn.
# (A .partial one is another build's, under way.)
keep=2
partial() { [[ $1 == *.partial.tar || $1 == *.partial/ ]]; }
newest() { ls -1td "$@" 2>/dev/null | grep -v '\.partial\(\.tar\|/\)$' | head -n "$keep"; }
prune() {
  local name=$1 key=$2 path old kept
  [ ! -f "$cache/$name-$key.tar" ] || touch "$cache/$name-$key.tar"
  kept=$(newest "$cache/$name"-*.tar)
  for path in "$cache/$name"-*.tar; do
    partial "$path" || grep -qxF "$path" <<<"$kept" || rm -f "$path"
  done
  if [ "$name" = airflow ]; then
    kept=$(newest "$cache"/wheels-*/)
    for path in "$cache"/wheels-*/; do
      partial "$path" || grep -qxF "$path" <<<"$kept" || rm -rf "$path"
    done
  fi
  for old in $(docker image ls --format '{{.Tag}}' "airflow-provider-jax/stand-in-$name"); do
    [ "$old" = "$key" ] || [ -f "$cache/$name-$old.tar" ] ||
      docker image rm "airflow-provider-jax/stand-in-$name:$old" >/dev/null 2>&1 || true
  done
}

if [ "${1:-}" = "--tags" ]; then
  for name in $all; do echo "$name=$(tag_of "$name")"; done
  exit 0
fi
command -v docker >/dev/null || die "no docker CLI: install Debian's docker.io (apt-get install docker.io)"
docker version >/dev/null 2>&1 || die "no Docker engine answers at ${DOCKER_HOST:-the default socket}: start one (dockerd, or: service docker start)"
mkdir -p "$cache"
# One build at a time per cache: two test processes (pytest-xdist's workers) starting at once
# both built the same stand-in into the same partial tarball, and one imported it half written
# (an image of no files, which every later run took for built).
exec 9>>"$cache/.build.lock"
flock 9
for name in ${*:-$all}; do
  key=$(key_of "$name")
  tag=$(tag_of "$name")
  stand_in="airflow-provider-jax/stand-in-$name:$key"
  if [ "$(size "$stand_in")" = 0 ]; then
    # Missing, or empty (imported from a broken tarball): from the tarball, else built.
    docker image rm "$stand_in" >/dev/null 2>&1 || true
    tarball="$cache/$name-$key.tar"
    command -v mmdebstrap >/dev/null || [ -f "$tarball" ] ||
      die "building the $name stand-in needs mmdebstrap (apt-get install mmdebstrap)"
    [ -f "$tarball" ] || rootfs "$name" "$tarball"
    load "$name" "$key" "$tarball"
    if [ "$(size "$stand_in")" = 0 ]; then
      docker image rm "$stand_in" >/dev/null
      rm -f "$tarball"
      die "$tarball made an empty image: removed, with the image; run again to build it"
    fi
  fi
  docker tag "$stand_in" "$tag"
  prune "$name" "$key"
  log "$tag: the stand-in $stand_in"
done
