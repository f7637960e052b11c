#!/usr/bin/env bash
# mmdebstrap essential hook for the postgres stand-in ($1: the root filesystem): Debian's
# postgresql package makes a cluster when installed; the entrypoint makes one in $PGDATA.
set -euo pipefail
mkdir -p "$1/etc/postgresql-common"
echo "create_main_cluster = false" >"$1/etc/postgresql-common/createcluster.conf"
