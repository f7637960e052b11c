"""A real Airflow: api-server, scheduler, dag-processor and triggerer (LocalExecutor, PostgreSQL),
with the example DAGs pointed at the Kubernetes API emulator by configuration alone.

The quickstart is started with ``airflow dags trigger --conf`` and defers, so its wait runs in
the real triggerer process; a two-day backfill of the scheduled DAG gets one output_dir per day.
"""

from __future__ import annotations

import pytest

from tests.support.airflow_stack import AirflowStack, airflow_stack
from tests.support.jobset_schema import REPO
from tests.support.jobsets import matching
from tests.support.k8s_emulator import Emulator, ProcessRunner
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def stack(
    k8s_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer
):
    home = tmp_path_factory.mktemp("running-airflow")
    k8s_emulator.reset()
    k8s_emulator.runner = ProcessRunner(pythonpath=[str(REPO), str(REPO / "dags")])
    kubeconfig = k8s_emulator.kubeconfig(home / "kubeconfig.json")
    env = {
        "AIRFLOW__JAX__DEFAULT_BACKEND": "kubernetes",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": k8s_emulator.connection(kubeconfig),
        "AIRFLOW_VAR_JAX_OUTPUT_ROOT": str(home / "outputs"),
        "PYTHONPATH": str(REPO),
    }
    with airflow_stack(home, REPO / "dags", postgres.create_database(), env) as running:
        yield running
    k8s_emulator.reset()


def test_trigger_with_conf_defers_through_the_triggerer(stack: AirflowStack, k8s_emulator):
    stack.wait_for_dag("quickstart")
    run_id = stack.trigger("quickstart", {"steps": 30})
    runs = stack.wait_for_runs("quickstart", 1, timeout=420)
    assert [r["state"] for r in runs] == ["success"], stack.logs("scheduler")
    result = stack.xcoms("quickstart", "train")[run_id]
    assert result["step"] == 30  # the conf reached the pods
    assert result["processes"] == 2
    # The triggerer wrote the trigger's part of the task log: the wait ran there.
    logs = stack.home / "logs" / "dag_id=quickstart"
    trigger_logs = [p for p in logs.rglob("*") if p.is_file() and ".trigger." in p.name]
    assert trigger_logs, sorted(str(p.relative_to(logs)) for p in logs.rglob("*"))
    assert "Trigger fired event" in "".join(p.read_text() for p in trigger_logs)
    task_log = "".join(p.read_text() for p in logs.rglob("attempt=1.log"))
    assert "Pausing task as DEFERRED" in task_log
    assert "Leader's last report: step 30: loss=" in task_log
    assert len(matching(k8s_emulator.submitted, dag_id="quickstart")) == 1
    assert k8s_emulator.jobsets() == []  # on_finish_action=delete_jobset


def test_two_day_backfill_gets_one_output_dir_per_day(stack: AirflowStack):
    stack.wait_for_dag("scheduled_training")
    stack.cli(
        "backfill",
        "create",
        "--dag-id",
        "scheduled_training",
        "--from-date",
        "2026-11-01",
        "--to-date",
        "2026-11-02",
    )
    # Unpausing also schedules the latest interval; the backfill adds exactly two runs.
    runs = stack.wait_for_runs("scheduled_training", 3, timeout=600)
    backfill = [r for r in runs if r["run_id"].startswith("backfill__")]
    assert sorted(r["state"] for r in backfill) == ["success", "success"], runs
    results = stack.xcoms("scheduled_training", "train")
    outputs = {results[r["run_id"]]["ds"]: results[r["run_id"]]["output_dir"] for r in backfill}
    root = stack.home / "outputs" / "scheduled_training"
    assert outputs == {"2026-11-01": f"{root}/20261101", "2026-11-02": f"{root}/20261102"}
