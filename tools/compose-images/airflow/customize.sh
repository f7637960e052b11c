#!/usr/bin/env bash
# mmdebstrap customize hook for the airflow stand-in ($1: the root filesystem). build.sh
# exports WHEELS (the wheels, downloaded on the host from the lock), CONSTRAINTS (the lock)
# and REQUIREMENTS (what to install). Laid out as the apache/airflow image is: user airflow
# (uid 50000, gid 0), Airflow in a virtualenv at /home/airflow/.local on the PATH,
# AIRFLOW_HOME /opt/airflow, both owned by airflow:0 and group-writable, /etc/passwd
# group-writable for an arbitrary uid.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rootfs=$1
# In the new root, with none of this machine's environment (its PIP_* settings, say).
in_root() { chroot "$rootfs" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
in_root useradd --uid 50000 --gid 0 --home-dir /home/airflow --create-home \
  --shell /bin/bash airflow
# The wheels stay in the image: pip there installs from them, offline (PIP_FIND_LINKS).
install -d "$rootfs/opt/stand-in"
cp -r "$WHEELS" "$rootfs/opt/stand-in/wheels"
cp "$CONSTRAINTS" "$rootfs/opt/stand-in/constraints.txt"
cp "$REQUIREMENTS" "$rootfs/opt/stand-in/requirements.txt"
in_root python3 -m venv /home/airflow/.local
# No bytecode, as in the image (its build deletes every .pyc): mmdebstrap clamps the mtime of
# every file newer than its start to that start, so bytecode written here would be stale (a
# source newer than the mtime it records) and written again by every container.
in_root /home/airflow/.local/bin/pip install --quiet --no-index --no-cache-dir --no-compile \
  --find-links /opt/stand-in/wheels -c /opt/stand-in/constraints.txt \
  -r /opt/stand-in/requirements.txt
find "$rootfs/home/airflow/.local" -name __pycache__ -type d -prune -exec rm -rf {} +
install -m 0755 "$here/entrypoint.sh" "$rootfs/entrypoint"
install -d "$rootfs/opt/airflow/dags" "$rootfs/opt/airflow/logs"
in_root chown -R airflow:0 /home/airflow /opt/airflow
in_root chmod -R g+rw /home/airflow /opt/airflow
chmod g=u "$rootfs/etc/passwd"
