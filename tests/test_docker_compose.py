"""docker-compose.yaml and the Dockerfile, read without a Docker engine (``make check``):
their shape, and Debian's docker-compose validating the file in both of its executor
set-ups. The stack itself runs in ``tests/compose/``; each check here guards a fault found
there, where no engine is needed to see it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.compose_stack import CELERY_ENV, README_COMMANDS

REPO = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
SERVICES = COMPOSE["services"]
COMMON = COMPOSE["x-airflow-common"]
AIRFLOW_SERVICES = {
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}
CELERY_SERVICES = {"redis", "airflow-worker", "flower"}


def lock() -> dict[str, str]:
    """``{name: version}`` of requirements/constraints.txt."""
    pins = re.findall(
        r"^([A-Za-z0-9_.\-]+)==(\S+)", (REPO / "requirements" / "constraints.txt").read_text(), re.M
    )
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pins}


def test_stack_shape():
    assert {"postgres", *AIRFLOW_SERVICES, *CELERY_SERVICES} <= set(SERVICES)
    # One service builds the image every Airflow service runs: a build per service would
    # leave all but one image dangling, each holding the layers of its day.
    assert [name for name, s in SERVICES.items() if "build" in s] == ["airflow-init"]
    assert SERVICES["airflow-init"]["build"] == "."
    assert "./dags:/opt/airflow/dags" in COMMON["volumes"]
    assert COMMON["environment"]["AIRFLOW__JAX__DEFAULT_BACKEND"] == "local"
    assert "FROM apache/airflow:" in (REPO / "Dockerfile").read_text()
    # A plain `up` is the LocalExecutor stack: Celery's services start only in its profile.
    assert all(SERVICES[s].get("profiles") == ["celery"] for s in CELERY_SERVICES)
    assert not any(SERVICES[s].get("profiles") for s in {"postgres", *AIRFLOW_SERVICES})
    # Services every profile starts never wait on Redis, which only `celery` starts.
    for name in AIRFLOW_SERVICES:
        assert "redis" not in SERVICES[name].get("depends_on", {}), name
    assert SERVICES["airflow-worker"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    # Celery's warm shutdown (Airflow's docker-stack docs): the signal goes to the worker only.
    assert SERVICES["airflow-worker"]["environment"]["DUMB_INIT_SETSID"] == "0"


def test_no_file_of_the_checkout_is_mounted_where_airflow_writes():
    """The API server opens its password file read-write, as uid 50000: a file bind-mounted
    from a Linux checkout (owned by its user, 0644) made it crash-loop. The shared config
    lives in a volume that airflow-init, as root, gives to AIRFLOW_UID."""
    binds = [v for v in COMMON["volumes"] if v.startswith((".", "/", "$"))]
    assert binds == ["./dags:/opt/airflow/dags"]  # read, never written
    env = COMMON["environment"]
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"].startswith(
        "/opt/airflow/config/"
    )
    assert env["AIRFLOW_CONFIG"].startswith("/opt/airflow/config/")
    assert "airflow-config:/opt/airflow/config" in COMMON["volumes"]
    assert SERVICES["airflow-init"]["user"] == "0:0"


def test_no_secret_is_fixed_in_the_file():
    """Made at random by airflow-init for each stack (docker/airflow-init.sh), shared through
    its airflow.cfg: a `change-me` JWT secret was every stack's."""
    text = (REPO / "docker-compose.yaml").read_text()
    assert "change-me" not in text
    for service in [COMMON, *SERVICES.values()]:
        for name in service.get("environment") or {}:
            assert not re.search(r"SECRET|FERNET|JWT", name), name
    init = (REPO / "docker" / "airflow-init.sh").read_text()
    for option in ("fernet_key", "secret_key", "jwt_secret"):
        assert f"{option} = " in init, option


def test_ports_are_published_on_this_machine_only_unless_told():
    (published,) = SERVICES["airflow-apiserver"]["ports"]
    assert re.fullmatch(r"\$\{AIRFLOW_BIND_ADDRESS:-127\.0\.0\.1\}:\$\{\w+:-8080\}:8080", published)


def test_flower_which_has_no_login_stays_on_this_machine_whatever_the_bind_address():
    """Flower's API can stop workers and revoke tasks, and it asks for no password."""
    (published,) = SERVICES["flower"]["ports"]
    assert re.fullmatch(r"127\.0\.0\.1:\$\{FLOWER_PORT:-5555\}:5555", published)


def test_the_dockerfile_installs_the_locks_versions():
    """Without constraints jax, jaxlib and optax floated to build day's newest, and the example
    DAGs that checkpoint had no orbax-checkpoint."""
    dockerfile = (REPO / "Dockerfile").read_text()
    installs = re.findall(r"^RUN pip install (.*?)(?:\n(?! )|\Z)", dockerfile, re.M | re.S)
    assert len(installs) == 2, installs
    assert "-c /opt/airflow-provider-jax/requirements/constraints.txt" in installs[0]
    assert "-r /opt/airflow-provider-jax/requirements/image.in" in installs[0]
    assert "--no-deps" in installs[1]  # the provider's code, its dependencies installed above
    pinned = lock()
    for name in ("orbax-checkpoint", "optax", "jax", "jaxlib", "celery", "flower", "redis"):
        assert name in pinned, name
    # celery 5.7.0 dropped celery.backends.database.retry, which the celery provider imports.
    assert tuple(int(p) for p in pinned["celery"].split(".")[:2]) < (5, 7)


def test_the_dependencies_layer_is_built_again_only_for_the_lock():
    """What is copied before the dependencies' ``pip install`` decides when that minute-long
    layer is built again: README.md among it rebuilt it for every edit of the README."""
    dockerfile = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    before = dockerfile.split("\nRUN pip install ", 1)[0]
    copied = {
        source
        for line in re.findall(r"^COPY (.*)$", before, re.M)
        for source in line.split()[:-1]
        if not source.startswith("--")
    }
    assert copied == {"requirements/constraints.txt", "requirements/image.in", "pyproject.toml"}


def test_a_busy_machine_gets_time():
    """A task's calls to the execution API (Airflow's 5 s), the scheduler's sends to Celery
    (the provider's 1 s) and the worker's health check (10 s) all timed out with every part
    well, on two busy cores; an API server's start outlasted its health check's grace."""
    assert float(COMMON["environment"]["AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT"]) >= 30
    assert float(COMMON["environment"]["AIRFLOW__CELERY__OPERATION_TIMEOUT"]) >= 30
    for name in ("airflow-apiserver", "airflow-scheduler", "airflow-worker"):
        check = SERVICES[name]["healthcheck"]
        assert int(check["timeout"].rstrip("s")) >= 30, name
        assert int(check["start_period"].rstrip("s")) >= 300, name


def test_a_dag_dropped_into_dags_is_found_within_a_minute():
    """Airflow's dag-processor looks for new files in a bundle every [dag_processor]
    refresh_interval, 5 minutes by default: a DAG a user dropped in stayed out of sight."""
    env = SERVICES["airflow-dag-processor"]["environment"]
    assert int(env["AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL"]) <= 30


def test_the_readme_removes_the_celery_stack_with_its_env_file():
    """Compose's ``down`` sees only the services of the profiles it is given: the README's
    plain ``down -v`` after the Celery ``up`` left Redis, the workers and Flower running, and
    their network."""
    assert README_COMMANDS[True, "down"] == ["--env-file", str(CELERY_ENV), "down", "-v"]


def test_celery_env_switches_profile_and_executor_together():
    settings = dict(
        line.split("=", 1)
        for line in (REPO / CELERY_ENV).read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert settings == {"COMPOSE_PROFILES": "celery", "AIRFLOW_EXECUTOR": "CeleryExecutor"}


def _config(*args: str, env: dict[str, str] | None = None) -> dict:
    if not shutil.which("docker-compose"):
        pytest.fail("Debian's docker-compose is not installed (make check installs it)", False)
    out = subprocess.run(
        ["docker-compose", *args, "-f", str(REPO / "docker-compose.yaml"), "config"],
        check=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )
    return yaml.safe_load(out.stdout)["services"]


@pytest.mark.parametrize(
    ("args", "executor"),
    [((), "LocalExecutor"), (("--env-file", str(REPO / CELERY_ENV)), "CeleryExecutor")],
    ids=["local", "celery"],
)
def test_docker_compose_config_validates(args: tuple[str, ...], executor: str):
    services = _config(*args)
    for name in AIRFLOW_SERVICES | {"airflow-worker", "flower"}:
        assert services[name]["environment"]["AIRFLOW__CORE__EXECUTOR"] == executor, name
    assert services["airflow-worker"]["command"] == "celery worker"


@pytest.mark.parametrize(
    ("env", "address"), [({}, "127.0.0.1"), ({"AIRFLOW_BIND_ADDRESS": "0.0.0.0"}, "0.0.0.0")]
)
def test_the_bind_address_is_the_users_to_open(env: dict[str, str], address: str):
    services = _config(env={**env, "AIRFLOW_API_PORT": "18080"})
    (port,) = services["airflow-apiserver"]["ports"]  # Compose v1 writes the short syntax
    assert port == f"{address}:18080:8080/tcp"
