#!/usr/bin/env bash
# mmdebstrap customize hook for the redis stand-in ($1: the root filesystem).
set -euo pipefail
install -d -o "$(chroot "$1" id -u redis)" -g "$(chroot "$1" id -g redis)" "$1/data"
