#!/usr/bin/env bash
# Run the quickstart DAG for real with `airflow dags test`, on the local backend: a project-local
# Airflow home with SQLite, 2 JAX processes standing in for a 2-host TPU slice.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
AIRFLOW="${VENV:-.venv}/bin/airflow"

export AIRFLOW_HOME="$ROOT/.airflow"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$AIRFLOW_HOME/airflow.db"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__JAX__DEFAULT_BACKEND=local
mkdir -p "$AIRFLOW_HOME"

echo "==> airflow db migrate (AIRFLOW_HOME=$AIRFLOW_HOME)"
if ! "$AIRFLOW" db migrate >"$AIRFLOW_HOME/migrate.log" 2>&1; then
    tail -n 40 "$AIRFLOW_HOME/migrate.log"
    exit 1
fi

echo "==> airflow dags test quickstart"
LOG="$AIRFLOW_HOME/quickstart.log"
"$AIRFLOW" dags test quickstart 2>&1 | tee "$LOG"

if ! RESULT=$(grep -o 'QUICKSTART RESULT: .*' "$LOG" | tail -n 1) || [ -z "$RESULT" ]; then
    echo "==> the quickstart DAG did not finish; see the log above ($LOG)" >&2
    exit 1
fi
echo
echo "==> leader's result (XCom of task 'train'): ${RESULT#QUICKSTART RESULT: }"
