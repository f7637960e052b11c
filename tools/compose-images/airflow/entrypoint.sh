#!/usr/bin/env bash
# The airflow stand-in's entrypoint (tools/compose-images), run under dumb-init as the
# apache/airflow image runs its own. It does what that image's documented entrypoint does
# for the commands docker-compose.yaml runs (docs.airflow.apache.org, docker-stack
# "Entrypoint"), no more:
#  - an arbitrary uid (group 0) gets a passwd entry and HOME=/home/airflow;
#  - umask 0002, so what it writes stays group-writable;
#  - it waits for the metadata database (`airflow db check`, CONNECTION_CHECK_MAX_COUNT
#    tries, CONNECTION_CHECK_SLEEP_TIME apart), and runs `airflow db migrate` if
#    _AIRFLOW_DB_MIGRATE is set;
#  - `bash ...` and `python ...` run as given; otherwise the arguments are an airflow command
#    (`airflow` in front is optional), and scheduler and celery commands first wait for the
#    Celery broker when the executor is CeleryExecutor.
# Not done: _AIRFLOW_WWW_USER_CREATE (a FAB user) and _PIP_ADDITIONAL_REQUIREMENTS.
command=${1:-}
set -euo pipefail
# The image's workaround for "cannot allocate memory in static TLS block" (apache/airflow#17546).
export LD_PRELOAD="/usr/lib/$(uname -m)-linux-gnu/libstdc++.so.6"

if [ "$(id -g)" != 0 ]; then
  echo "WARNING: run this image with group 0 (you started it with gid $(id -g))" >&2
  [ "$(id -u)" = 50000 ] || exit 1
fi
umask 0002
if ! whoami >/dev/null 2>&1; then
  if [ -w /etc/passwd ]; then
    echo "default:x:$(id -u):0:default user:${AIRFLOW_USER_HOME_DIR}:/sbin/nologin" >>/etc/passwd
  fi
  export HOME=$AIRFLOW_USER_HOME_DIR
fi

tries=${CONNECTION_CHECK_MAX_COUNT:=20}
pause=${CONNECTION_CHECK_SLEEP_TIME:=3}

# retry WHAT COMMAND...: until COMMAND succeeds, at most $tries times.
retry() {
  local what=$1 left=$tries out
  shift
  until out=$("$@" 2>&1); do
    left=$((left - 1))
    if [ "$left" -le 0 ]; then
      printf 'ERROR: %s failed %s times; the last time:\n%s\n' "$what" "$tries" "$out" >&2
      exit 1
    fi
    sleep "$pause"
  done
}

# reachable URL: a TCP connection to the host and port of URL.
reachable() {
  python - "$1" <<'PY'
import socket, sys
from urllib.parse import urlsplit
url = urlsplit(sys.argv[1])
ports = {"redis": 6379, "postgresql": 5432, "amqp": 5672, "mysql": 3306}
port = url.port or ports.get(url.scheme.split("+")[0], 0)
socket.create_connection((url.hostname or "localhost", port), timeout=5).close()
PY
}

if [ "$tries" -gt 0 ]; then
  retry "the metadata database check (airflow db check)" airflow db check
fi
if [ -n "${_AIRFLOW_DB_MIGRATE:-}" ]; then
  airflow db migrate || true
fi

case $command in
  bash) shift; exec /bin/bash "$@" ;;
  python) shift; exec python "$@" ;;
  airflow) shift; command=${1:-} ;;
esac

if [[ $command =~ ^(scheduler|celery)$ ]] && [ "$tries" -gt 0 ] &&
  [ "$(airflow config get-value core executor)" = CeleryExecutor ]; then
  retry "a connection to the Celery broker" reachable "$(airflow config get-value celery broker_url)"
fi
exec airflow "$@"
