#!/usr/bin/env bash
# docker-compose.yaml's airflow-init: runs as root before any other Airflow service, then
# exits. A setting that cannot work stops the stack here, with the reason, not in a
# restart loop later.
#  1. The settings: AIRFLOW_UID a uid, AIRFLOW_EXECUTOR one this stack wires, the
#     default password only while the ports are published on this machine alone.
#  2. The shared secrets, made at random once per stack: every component reads them from
#     $AIRFLOW_CONFIG (a volume). Components that disagree on [api] secret_key cannot read
#     each other's task logs; on [api_auth] jwt_secret, cannot call each other's APIs.
#  3. The password file of the UI/API user, owned by AIRFLOW_UID: the API server opens it
#     read-write, which a file bind-mounted from a checkout does not allow.
#  4. `airflow db migrate`.
set -euo pipefail
fail() { printf 'airflow-init: %s\n' "$*" >&2; exit 1; }

[[ ${AIRFLOW_UID:-} =~ ^[0-9]+$ ]] ||
  fail "AIRFLOW_UID must be a numeric uid (got '${AIRFLOW_UID:-}'); on Linux, your own: AIRFLOW_UID=\$(id -u)"
[ "$AIRFLOW_UID" != 0 ] ||
  echo "airflow-init: AIRFLOW_UID=0 runs every Airflow service as root" >&2

executor=$AIRFLOW__CORE__EXECUTOR
case $executor in
  LocalExecutor) ;;
  CeleryExecutor)
    # The celery profile's Redis, created beside this container when the profile is on: the
    # network's DNS names it at once. (A name it lacks goes to DNS servers beyond the
    # network, which may never answer: hence the timeouts.)
    for _ in 1 2 3; do timeout 3 getent hosts redis >/dev/null && break; sleep 1; done
    timeout 3 getent hosts redis >/dev/null ||
      fail "CeleryExecutor needs the celery profile (Redis, the workers): docker compose --env-file docker/celery.env up" ;;
  *) fail "AIRFLOW_EXECUTOR must be LocalExecutor or CeleryExecutor (docker/celery.env), not '$executor'" ;;
esac

case ${AIRFLOW_BIND_ADDRESS:-} in
  127.* | localhost | ::1 | "[::1]") ;;
  *)
    [ "$AIRFLOW_PASSWORD" != airflow ] ||
      fail "AIRFLOW_BIND_ADDRESS=$AIRFLOW_BIND_ADDRESS publishes the UI beyond this machine: set AIRFLOW_PASSWORD to a password of your own" ;;
esac

config_dir=$(dirname "$AIRFLOW_CONFIG")
install -d -o "$AIRFLOW_UID" -g 0 -m 0770 "$config_dir"
if [ ! -s "$AIRFLOW_CONFIG" ]; then
  python - "$AIRFLOW_CONFIG" <<'PY'
import base64, os, secrets, sys
with open(sys.argv[1] + ".partial", "w") as cfg:
    cfg.write(
        "# Made by airflow-init for this stack: the secrets every component shares.\n"
        f"[core]\nfernet_key = {base64.urlsafe_b64encode(os.urandom(32)).decode()}\n"
        f"[api]\nsecret_key = {secrets.token_urlsafe(32)}\n"
        f"[api_auth]\njwt_secret = {secrets.token_urlsafe(32)}\n"
    )
os.replace(sys.argv[1] + ".partial", sys.argv[1])
PY
fi
passwords=$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE
python -c 'import json, sys; print(json.dumps({"airflow": sys.argv[1]}))' "$AIRFLOW_PASSWORD" >"$passwords"
chown "$AIRFLOW_UID:0" "$AIRFLOW_CONFIG" "$passwords"
chmod 0640 "$AIRFLOW_CONFIG"
chmod 0660 "$passwords"

airflow db migrate
