#!/usr/bin/env bash
# Run a DAG of dags/ for real with `airflow dags test`, on the local backend: a project-local
# Airflow home with SQLite (JAX processes on this machine's CPU). `make demo` runs the
# quickstart (2 JAX processes standing in for a 2-host TPU slice); `make dags-test DAG=<id>`
# runs any other, and `CONF='{"steps": 80}'` (make passes it on) becomes the run's
# `airflow dags test --conf`. Works in a fresh shell: everything Airflow needs is set here.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
AIRFLOW="${VENV:-.venv}/bin/airflow"
DAG="${1:-quickstart}"
TEST=(dags test "$DAG")
if [ -n "${CONF:-}" ]; then
    TEST+=(--conf "$CONF")
fi

export AIRFLOW_HOME="$ROOT/.airflow"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$AIRFLOW_HOME/airflow.db"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__JAX__DEFAULT_BACKEND=local
# The rendered JobSet is a templated field of ~5,500 characters; keep all of it, as
# docker-compose.yaml does.
export AIRFLOW__CORE__MAX_TEMPLATED_FIELD_LENGTH=16384
# `airflow dags test` warns that graphviz is missing; it only draws DAG graphs, unused here.
export PYTHONWARNINGS="ignore:Could not import graphviz"
# The scheduler's bookkeeping (DAG parsing, next-run info, task-state API calls, log group
# markers and the XCom push) at WARNING: the demo shows the tasks, the JAX processes' lines and
# the result. The whole log is in $AIRFLOW_HOME/<dag>.log all the same.
export AIRFLOW__LOGGING__NAMESPACE_LEVELS="airflow.serialization=WARNING airflow.models=WARNING \
airflow.dag_processing=WARNING airflow.api_fastapi=WARNING task=WARNING"
mkdir -p "$AIRFLOW_HOME"

echo "==> airflow db migrate (AIRFLOW_HOME=$AIRFLOW_HOME)"
if ! "$AIRFLOW" db migrate >"$AIRFLOW_HOME/migrate.log" 2>&1; then
    tail -n 40 "$AIRFLOW_HOME/migrate.log"
    exit 1
fi

echo "==> airflow ${TEST[*]}"
echo "    (a JAX process's lines start with its [slice/host]: [0/0] is the leader, process 0)"
LOG="$AIRFLOW_HOME/$DAG.log"
"$AIRFLOW" "${TEST[@]}" 2>&1 | tee "$LOG"
[ "$DAG" = quickstart ] || exit 0

if ! RESULT=$(grep -o 'QUICKSTART RESULT: .*' "$LOG" | tail -n 1) || [ -z "$RESULT" ]; then
    echo "==> the quickstart DAG did not finish; see the log above ($LOG)" >&2
    exit 1
fi
echo
echo "==> leader's result (XCom of task 'train'): ${RESULT#QUICKSTART RESULT: }"
