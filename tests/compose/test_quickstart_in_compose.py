"""The path a user takes with docker-compose.yaml, on both of its executors: ``docker compose
build``, ``up -d --wait``, the quickstart triggered through the REST API, its XCom, its task
log through the REST API and its result line in the UI in a real browser, then ``down -v``
leaving no container, network or volume: the README's ``docker compose`` lines, as written,
in a copy of the checkout as a clone has it. LocalExecutor as ``up`` starts it;
CeleryExecutor with two workers as ``--env-file docker/celery.env up --scale
airflow-worker=2`` does. In each, a DAG the project does not ship
(``tests/compose/dags/held_out_allgather.py``) is dropped into ``dags/`` once the stack is up,
and runs to its XCom.

The images the stack starts from are stand-ins (``tools/compose-images``, built offline: no
registry is reachable here); docs/docker-compose.md says how each differs from the real one.
The Dockerfile and docker-compose.yaml are used as shipped.

Each of the issue's five faults fails a test here: the API server crash-looping on its
password file (no restart, and the API answers); task logs unreadable for want of a shared
``[api] secret_key`` (the log through the API and the UI); the image's packages off the lock
(``test_compose_image.py``); a worker's health check or the execution API timing out on a busy
machine (no probe over its timeout, the task in its first try); ports on every interface with
fixed secrets (the published addresses, the secrets made for this stack)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support.browser import Browser
from tests.support.compose_stack import ComposeStack, checkout
from tests.support.docker_engine import DockerEngine

pytestmark = pytest.mark.timeout(1800)  # the first run builds the stand-ins (once a machine)

STEPS = 20
CONFIG = "/opt/airflow/config/airflow.cfg"
PASSWORDS = "/opt/airflow/config/simple_auth_manager_passwords.json"
HELD_OUT = Path(__file__).parent / "dags" / "held_out_allgather.py"
# From the file's landing in dags/ to its DAG in the API: the dag-processor's next look for new
# files ([dag_processor] refresh_interval, 30 s in the stack; Airflow's default is 5 minutes),
# then its parse, on a busy machine.
PARSED_WITHIN_S = 120


@dataclass
class Ran:
    """A stack, and the quickstart run it finished."""

    stack: ComposeStack
    run_id: str
    up_s: float  # `up -d --wait`, built image to healthy
    run_s: float  # trigger to success
    dropped_at: float  # when the held-out DAG landed in dags/ (time.monotonic())


@pytest.fixture(scope="module", params=["local", "celery"])
def ran(
    request: pytest.FixtureRequest,
    docker_engine: DockerEngine,
    compose_image: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Ran]:
    root = checkout(tmp_path_factory.mktemp("checkout"), request.param)
    if request.param == "celery":  # and as a Linux user whose uid is not the image's
        stack = ComposeStack(docker_engine, root, celery=True, settings={"AIRFLOW_UID": "1000"})
    else:
        stack = ComposeStack(docker_engine, root)
    stack.compose("build", timeout=1200)  # as a user does: the build the run made, cached
    try:
        started = time.monotonic()
        stack.up()
        up_s = time.monotonic() - started
        shutil.copy(HELD_OUT, root / "dags")  # found while the quickstart runs
        dropped_at = time.monotonic()
        stack.unpause("quickstart")
        started = time.monotonic()
        run_id = stack.trigger("quickstart", {"steps": STEPS})
        state = stack.finished("quickstart", run_id)
        run_s = time.monotonic() - started
        assert state == "success", stack.state()
        print(f"\n{request.param}: up --wait {up_s:.0f} s, quickstart {run_s:.0f} s")
        yield Ran(stack, run_id, up_s, run_s, dropped_at)
    finally:
        stack.down()


def test_the_quickstart_returns_the_leaders_result_as_its_xcom(ran: Ran):
    result = ran.stack.xcom("quickstart", ran.run_id, "train")
    assert result["step"] == STEPS  # the conf reached the JAX processes
    assert result["processes"] == 2
    assert result["loss"] > 0


def test_its_task_log_reads_through_the_rest_api(ran: Ran):
    """The API server fetches the log from the log server of the container that ran the task,
    a request signed with ``[api] secret_key``: with a key of its own in each component, the
    log server refused it and the API served Airflow's notice instead."""
    log = ran.stack.task_log("quickstart", ran.run_id, "show")
    assert "QUICKSTART RESULT: loss=" in log, log
    assert f"at step {STEPS} (2 processes, 8 devices)" in log, log
    assert "secret_key" not in log, log
    train = ran.stack.task_log("quickstart", ran.run_id, "train")
    assert f"step {STEPS}/{STEPS} (100%)" in train, train  # the leader's progress


def test_the_ui_shows_the_result_line(ran: Ran, browser_session, tmp_path_factory):
    ui = Browser(browser_session, ran.stack.url, tmp_path_factory.mktemp("compose-ui"))
    ui.driver.delete_all_cookies()
    ui.open("/")
    login(ui, ran.stack.password)
    ui.open(f"/dags/quickstart/runs/{quote(ran.run_id, safe='')}/tasks/show")
    ui.wait_for_text("QUICKSTART RESULT: loss=", f"at step {STEPS}", timeout=120, expand=True)
    ui.shot("result-line")


def login(ui: Browser, password: str) -> None:
    """The simple auth manager's sign-in form, as a user fills it."""
    ui.wait_for("the sign-in form", lambda: ui.driver.find_elements("name", "username"))
    ui.driver.find_element("name", "username").send_keys("airflow")
    ui.driver.find_element("name", "password").send_keys(password)
    ui.driver.find_element("css selector", "button[type=submit]").click()
    ui.wait_for_text("Welcome", timeout=120)


def test_a_dag_dropped_into_dags_runs_to_its_xcom(ran: Ran):
    """Found by the dag-processor without a restart, run by the stack's executor, its task's
    log read through the REST API. New files were found every 5 minutes (Airflow's default)."""
    left = PARSED_WITHIN_S - (time.monotonic() - ran.dropped_at)
    ran.stack.unpause("held_out_allgather", timeout=max(left, 1))
    run_id = ran.stack.trigger("held_out_allgather")
    assert ran.stack.finished("held_out_allgather", run_id) == "success", ran.stack.state()
    result = ran.stack.xcom("held_out_allgather", run_id, "gather")
    assert result == {"ranks": [0, 1], "processes": 2, "devices": 4}
    log = ran.stack.task_log("held_out_allgather", run_id, "report")
    assert "HELD-OUT RESULT: ranks [0, 1] of 4 devices" in log, log


def test_no_service_restarted_and_every_health_check_passed_in_time(ran: Ran):
    """``restart: always`` hides a crash loop from ``ps`` (the API server's, on its password
    file); a health check over its timeout fails ``up --wait`` with a healthy worker."""
    containers = ran.stack.containers()
    assert {c["Name"]: c["RestartCount"] for c in containers if c["RestartCount"]} == {}
    late = {
        c["Name"]: probe["Output"]
        for c in containers
        for probe in (c["State"].get("Health") or {}).get("Log", [])
        if probe["ExitCode"] != 0 and "exceeded timeout" in probe["Output"]
    }
    assert late == {}
    services = [c["Config"]["Labels"]["com.docker.compose.service"] for c in containers]
    if ran.stack.celery:
        assert services.count("airflow-worker") == 2
        healthy = [
            c["State"]["Health"]["Status"]
            for c in containers
            if c["Config"]["Labels"]["com.docker.compose.service"] == "airflow-worker"
        ]
        assert healthy == ["healthy", "healthy"]


def test_each_task_ran_in_its_first_try(ran: Ran):
    """A start request to the execution API answered late and retried met the task already
    running, and the try failed before it began: on a busy machine, with Airflow's 5 s."""
    for task_id in ("train", "show"):
        ti = ran.stack.api("GET", ran.stack.task_path("quickstart", ran.run_id, task_id))
        assert (ti["state"], ti["try_number"]) == ("success", 1), ti


def test_the_ports_are_published_on_this_machine_only(ran: Ran):
    published = {
        f"{c['Config']['Labels']['com.docker.compose.service']} {port}": binding["HostIp"]
        for c in ran.stack.containers()
        for port, bindings in (c["NetworkSettings"]["Ports"] or {}).items()
        for binding in bindings or []
    }
    expected = {"airflow-apiserver 8080/tcp"} | ({"flower 5555/tcp"} if ran.stack.celery else set())
    assert published == dict.fromkeys(expected, "127.0.0.1")


def test_the_secrets_are_this_stacks_own(ran: Ran):
    """Made at random by airflow-init for this stack and shared by every component through
    its airflow.cfg; the password file is AIRFLOW_UID's, which the API server opens
    read-write."""
    config = ran.stack.compose("exec", "-T", "airflow-scheduler", "cat", CONFIG)
    secrets = dict(line.split(" = ", 1) for line in config.splitlines() if " = " in line)
    assert sorted(secrets) == ["fernet_key", "jwt_secret", "secret_key"], config
    assert all(len(value) >= 32 for value in secrets.values()), config
    assert len(set(secrets.values())) == 3
    owner = ran.stack.compose("exec", "-T", "airflow-apiserver", "stat", "-c", "%u %a", PASSWORDS)
    assert owner.split() == [ran.stack.settings.get("AIRFLOW_UID", "50000"), "660"]
    passwords = ran.stack.compose("exec", "-T", "airflow-apiserver", "cat", PASSWORDS)
    assert json.loads(passwords) == {"airflow": ran.stack.password}
