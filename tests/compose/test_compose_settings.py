"""Settings a user gets wrong (docker-compose.yaml's variables) stop the stack before any
Airflow service starts, saying which and why: airflow-init checks them
(docker/airflow-init.sh), and Compose itself a port that is none."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.compose_stack import ComposeStack
from tests.support.docker_engine import DockerEngine

pytestmark = pytest.mark.timeout(1800)  # the first run builds the stand-ins (once a machine)


@pytest.fixture(scope="module")
def stack(
    docker_engine: DockerEngine, compose_image: str, repository: Path
) -> Iterator[ComposeStack]:
    """The stack's database, up: each case runs airflow-init alone, as `up` runs it first."""
    stack = ComposeStack(docker_engine, repository)
    stack.up("postgres")
    yield stack
    stack.down()


def init(stack: ComposeStack, **settings: str) -> tuple[int, str]:
    with_settings = replace(stack, settings={**stack.settings, **settings})
    return with_settings.attempt("run", "--rm", "--no-deps", "airflow-init", timeout=600)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"AIRFLOW_UID": "airflow"}, "AIRFLOW_UID must be a numeric uid (got 'airflow')"),
        (
            {"AIRFLOW_EXECUTOR": "KubernetesExecutor"},
            "AIRFLOW_EXECUTOR must be LocalExecutor or CeleryExecutor",
        ),
        ({"AIRFLOW_EXECUTOR": "CeleryExecutor"}, "CeleryExecutor needs the celery profile"),
        ({"AIRFLOW_BIND_ADDRESS": "0.0.0.0"}, "set AIRFLOW_PASSWORD to a password of your own"),
        # Empty is unset to Compose: the default password, refused on open ports as well.
        (
            {"AIRFLOW_BIND_ADDRESS": "0.0.0.0", "AIRFLOW_PASSWORD": ""},
            "set AIRFLOW_PASSWORD to a password of your own",
        ),
    ],
    ids=[
        "uid-not-a-number",
        "unknown-executor",
        "celery-without-profile",
        "open-ports",
        "open-ports-empty-password",
    ],
)
def test_a_wrong_setting_stops_the_stack_at_airflow_init(
    stack: ComposeStack, settings: dict[str, str], says: str
):
    status, out = init(stack, **settings)
    assert status != 0, out
    assert says in out, out


def test_open_ports_with_a_password_of_ones_own_and_no_airflow_uid(stack: ComposeStack):
    """AIRFLOW_UID unset (or empty) is the image's airflow user, 50000."""
    status, out = init(
        stack, AIRFLOW_BIND_ADDRESS="0.0.0.0", AIRFLOW_PASSWORD="not-the-default", AIRFLOW_UID=""
    )
    assert status == 0, out
    owner = stack.compose(
        "run", "--rm", "--no-deps", "--entrypoint", "stat", "airflow-scheduler",
        "-c", "%u", "/opt/airflow/config/simple_auth_manager_passwords.json",
    )  # fmt: skip
    assert owner.split()[-1] == "50000"


@pytest.mark.parametrize("port", ["eighty", "99999"])
def test_a_port_that_is_none_is_refused_by_compose(stack: ComposeStack, port: str):
    status, out = replace(stack, settings={**stack.settings, "AIRFLOW_API_PORT": port}).attempt(
        "config", "-q"
    )
    assert status != 0, out
    assert port in out, out
