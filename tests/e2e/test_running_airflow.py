"""A real Airflow: api-server, scheduler, dag-processor and triggerer (LocalExecutor, PostgreSQL),
with the example DAGs pointed at the Kubernetes API emulator by configuration alone.

The quickstart is started with a conf through the REST API (as the UI's trigger dialog does)
and defers, so its wait runs in the real triggerer process. Then a headless Chromium drives
Airflow's own React UI: the task instance's logs (progress lines), Rendered Templates (the
submitted JobSet) and XCom pages, and a two-day backfill of the scheduled DAG made from the
UI's backfill dialog, which gets one output_dir per day. A task on a GKE cluster (found through
Google's GKE API, ``tests/support/gke.py``) shows its extra links in the task's Details tab; the
quickstart, on a cluster named by a Kubernetes connection, shows none. Screenshots of each
checked page go under the test's tmp dir.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
import yaml

from airflow_provider_jax.links.tensorboard import TensorBoardLink
from harness.jobsets import matching, succeed
from harness.k8s_emulator import Emulator, ProcessRunner
from harness.k8s_emulator.kueue_objects import ClusterQueue, LocalQueue
from tests.support.airflow_stack import AirflowStack, airflow_stack
from tests.support.browser import Browser
from tests.support.gke import CLUSTER, LOCATION, PROJECT, Gke
from tests.support.jobset_schema import REPO
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def stack(
    k8s_emulator: Emulator,
    gke: Gke,
    tmp_path_factory: pytest.TempPathFactory,
    postgres: PostgresServer,
):
    home = tmp_path_factory.mktemp("running-airflow")
    k8s_emulator.reset()
    k8s_emulator.runner = ProcessRunner(pythonpath=[str(REPO), str(REPO / "dags")])
    kubeconfig = k8s_emulator.kubeconfig(home / "kubeconfig.json")
    # The GKE cluster runs scripted pods: its task is here for its links, not its training.
    gke.emulator.script(succeed({"loss": 0.5}))
    gke.emulator.queues(
        ClusterQueue("cq", {"google.com/tpu": 8}, flavor="v5e"),
        LocalQueue("default", "team-a", "cq"),
    )
    dags = home / "dags"  # the examples as shipped, and a task on the GKE cluster
    dags.mkdir()
    for example in (REPO / "dags").glob("*.py"):
        (dags / example.name).symlink_to(example)
    (dags / "gke_quickstart.py").symlink_to(Path(__file__).parent / "dags" / "gke_quickstart.py")
    env = {
        "AIRFLOW__JAX__DEFAULT_BACKEND": "kubernetes",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": k8s_emulator.connection(kubeconfig),
        "AIRFLOW_VAR_JAX_OUTPUT_ROOT": str(home / "outputs"),
        "PYTHONPATH": str(REPO),
        **gke.env,
    }
    with airflow_stack(home, dags, postgres.migrated_database(), env) as running:
        yield running
    k8s_emulator.reset()


def finished(stack: AirflowStack, dag_id: str, run_id: str, timeout: float) -> str:
    """``run_id``'s final state, once it has one."""

    def state() -> str | None:
        rows = stack.query("SELECT state FROM dag_run WHERE run_id = :run_id", run_id=run_id)
        return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None

    return stack.wait_until(state, timeout, lambda: f"{dag_id} {run_id}: {stack.runs(dag_id)}")


@pytest.fixture(scope="module")
def quickstart_run(stack: AirflowStack) -> str:
    """The quickstart, triggered with a conf through the REST API (as the UI's dialog does),
    and finished: the run the tests below read, whichever of them runs, alone or first."""
    stack.wait_for_dag("quickstart")
    run_id = stack.trigger("quickstart", {"steps": 30})
    assert finished(stack, "quickstart", run_id, 420) == "success", stack.logs("scheduler")
    return run_id


def test_trigger_with_conf_defers_through_the_triggerer(
    stack: AirflowStack, k8s_emulator, quickstart_run: str
):
    run_id = quickstart_run
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
    assert "Leader's last report: step 30/30 (100%): loss=" in task_log
    assert len(matching(k8s_emulator.submitted, dag_id="quickstart")) == 1
    assert k8s_emulator.jobsets() == []  # on_finish_action=delete_jobset


@pytest.fixture(scope="module")
def ui(stack: AirflowStack, browser_session, tmp_path_factory: pytest.TempPathFactory) -> Browser:
    """The UI in Chromium; the simple auth manager (all admins) logs the browser in."""
    browser = Browser(
        browser_session, f"http://127.0.0.1:{stack.api_port}", tmp_path_factory.mktemp("ui")
    )
    browser.open("/")
    browser.wait_for_text("Welcome", "Health")
    return browser


def test_the_ui_shows_the_jobset_the_result_and_the_progress(
    stack: AirflowStack, ui: Browser, quickstart_run: str
):
    run = {"run_id": quickstart_run}
    task = f"/dags/quickstart/runs/{quote(run['run_id'], safe='')}/tasks/train"
    ui.open(task)  # the Logs tab
    ui.wait_for_text("Created JobSet default/train-", "Leader's last report: step 30/30 (100%)")
    ui.shot("task-logs")

    ui.open(f"{task}/rendered_templates")
    body = ui.wait_for_text("jobset_manifest", "kind: JobSet", "total_steps")
    ui.shot("rendered-jobset")
    # The editor shows the YAML a line at a time; its text is the submitted JobSet's.
    # The editor highlights token by token, one per text line; spaces carry no meaning here.
    flat = re.sub(r"\s+", "", body)
    assert "-name:AIRFLOW_JAX_RUNTIME" in flat and "value:'<elided:" in flat
    manifest = yaml.safe_load(
        stack.query(
            "SELECT rendered_fields->>'jobset_manifest' FROM rendered_task_instance_fields"
            " WHERE dag_id = 'quickstart' AND task_id = 'train' AND run_id = :run_id",
            run_id=quickstart_run,
        )[0][0]
    )
    name = stack.xcoms("quickstart", "train", "jobset_name")[run["run_id"]]
    assert manifest["metadata"]["name"] == name and f"name:{name}" in flat

    ui.open(f"{task}/xcom")
    ui.wait_for_text("return_value", "last_report", "jobset_name")
    ui.driver.find_element("css selector", "button[aria-label='Expand all extra JSON']").click()
    result = stack.xcoms("quickstart", "train")[run["run_id"]]
    ui.wait_for_text('"processes": 2', f'"step": {result["step"]}', '"total_steps": 30')
    ui.shot("xcom")


def test_a_two_day_backfill_from_the_ui_dialog_gets_one_output_dir_per_day(
    stack: AirflowStack, ui: Browser
):
    stack.wait_for_dag("scheduled_training")
    ui.open("/dags/scheduled_training")
    ui.click("Trigger", tag="button")
    ui.click("Backfill", within=ui.dialog())
    ui.pick_datetime("From", "2026/11/01")
    ui.pick_datetime("To", "2026/11/02")
    ui.wait_for_text("2 runs will be triggered.")
    ui.shot("backfill-dialog")
    ui.click("Run Backfill", within=ui.dialog(), tag="button")
    ui.wait_for_text("Backfill in progress")
    ui.shot("backfill-started")
    # Unpausing also schedules the latest interval; the backfill adds exactly two runs.
    runs = stack.wait_for_runs("scheduled_training", 3, timeout=600)
    backfill = [r for r in runs if r["run_id"].startswith("backfill__")]
    assert sorted(r["state"] for r in backfill) == ["success", "success"], runs
    results = stack.xcoms("scheduled_training", "train")
    outputs = {results[r["run_id"]]["ds"]: results[r["run_id"]]["output_dir"] for r in backfill}
    root = stack.home / "outputs" / "scheduled_training"
    assert outputs == {"2026-11-01": f"{root}/20261101", "2026-11-02": f"{root}/20261102"}
    ui.open("/dags/scheduled_training/runs")
    ui.wait_for_text("backfill__2026-11-01", "backfill__2026-11-02")
    ui.shot("backfill-runs")
    print("UI screenshots:", *map(str, ui.taken), sep="\n  ")


LINKS = ("JobSet on GKE", "JobSet logs", "Kueue events")


def test_a_gke_task_links_to_its_jobset_and_a_task_elsewhere_to_nothing(
    stack: AirflowStack, ui: Browser, gke: Gke, quickstart_run: str
):
    """The task page's extra links: the GKE workload page, Cloud Logging and Kueue's events
    for a task on a GKE cluster (found through Google's API, queued by Kueue); none, and no
    error logged for them, for the quickstart on a cluster named by a Kubernetes connection."""
    stack.wait_for_dag("gke_quickstart")
    run_id = stack.trigger("gke_quickstart")
    assert finished(stack, "gke_quickstart", run_id, 300) == "success", stack.logs("scheduler")
    assert stack.xcoms("gke_quickstart", "train")[run_id] == {"loss": 0.5}
    name = stack.xcoms("gke_quickstart", "train", "jobset_name")[run_id]
    assert gke.api.calls and all(gke.account.signed(token) for _, token in gke.api.calls)
    assert gke.emulator.api.minted and all(r.status != 401 for r in gke.emulator.requests)

    # The task's Details tab holds its extra links.
    ui.open(f"/dags/gke_quickstart/runs/{quote(run_id, safe='')}/tasks/train/details")
    hrefs = ui.wait_for(
        "the task's links", lambda: _links(ui) if set(_links(ui)) >= set(LINKS) else None
    )
    ui.shot("gke-links")
    assert set(hrefs) == set(LINKS)  # no TensorBoard link: no output_dir with event files
    where = f"{LOCATION}/{CLUSTER}/default/{name}"
    assert hrefs["JobSet on GKE"] == (
        f"https://console.cloud.google.com/kubernetes/service/{where}/details?project={PROJECT}"
    )
    logs = unquote(hrefs["JobSet logs"])
    assert f'resource.labels.cluster_name="{CLUSTER}"' in logs
    assert f'labels."k8s-pod/jobset_sigs_k8s_io/jobset-name"="{name}"' in logs
    assert f'jsonPayload.involvedObject.name:"jobset-{name}-"' in unquote(hrefs["Kueue events"])

    ui.open(f"/dags/quickstart/runs/{quote(quickstart_run, safe='')}/tasks/train/details")
    # The heading shows once the links are fetched: the keys come, each without a URL.
    ui.wait_for_text("Extra Links", "Run ID")
    ui.shot("no-links")
    assert _links(ui) == {}
    assert "XCom not found" not in (stack.home / "api-server.log").read_text(errors="replace")


def _links(ui: Browser) -> dict[str, str]:
    """The page's extra links, by name: the UI shows a link only when its URL is not empty."""
    anchors = ui.driver.find_elements("css selector", "a[href]")
    return {
        a.text: a.get_attribute("href") for a in anchors if a.text in (*LINKS, TensorBoardLink.name)
    }
