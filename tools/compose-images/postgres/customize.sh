#!/usr/bin/env bash
# mmdebstrap customize hook for the postgres stand-in ($1: the root filesystem).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
install -m 0755 "$here/entrypoint.sh" "$1/usr/local/bin/docker-entrypoint.sh"
install -d -o "$(chroot "$1" id -u postgres)" -g "$(chroot "$1" id -g postgres)" -m 0700 \
  "$1/var/lib/postgresql/data"
