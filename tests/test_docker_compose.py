"""docker-compose.yaml: no Docker engine here, so check its shape and let Debian's
docker-compose validate it (installed by .ci/run), in both of its executor set-ups."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
CELERY_ENV = REPO / "docker" / "celery.env"
AIRFLOW_SERVICES = {
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}
CELERY_SERVICES = {"redis", "airflow-worker", "flower"}


def test_stack_shape():
    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", *AIRFLOW_SERVICES, *CELERY_SERVICES} <= set(services)
    common = compose["x-airflow-common"]
    assert common["build"] == "."
    assert "./dags:/opt/airflow/dags" in common["volumes"]
    assert common["environment"]["AIRFLOW__JAX__DEFAULT_BACKEND"] == "local"
    assert "FROM apache/airflow:" in (REPO / "Dockerfile").read_text()
    # A plain `up` is the LocalExecutor stack: Celery's services start only in its profile.
    assert all(services[s].get("profiles") == ["celery"] for s in CELERY_SERVICES)
    assert not any(services[s].get("profiles") for s in {"postgres", *AIRFLOW_SERVICES})
    # Services every profile starts never wait on Redis, which only `celery` starts.
    for name in AIRFLOW_SERVICES:
        assert "redis" not in services[name].get("depends_on", {}), name
    assert services["airflow-worker"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    # Celery's warm shutdown (Airflow's docker-stack docs): the signal goes to the worker only.
    assert services["airflow-worker"]["environment"]["DUMB_INIT_SETSID"] == "0"


def test_celery_env_switches_profile_and_executor_together():
    settings = dict(
        line.split("=", 1)
        for line in CELERY_ENV.read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert settings == {"COMPOSE_PROFILES": "celery", "AIRFLOW_EXECUTOR": "CeleryExecutor"}


def _config(*args: str) -> dict:
    out = subprocess.run(
        ["docker-compose", *args, "-f", str(REPO / "docker-compose.yaml"), "config"],
        check=True,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    return yaml.safe_load(out.stdout)["services"]


@pytest.mark.parametrize(
    ("args", "executor"),
    [((), "LocalExecutor"), (("--env-file", str(CELERY_ENV)), "CeleryExecutor")],
    ids=["local", "celery"],
)
def test_docker_compose_config_validates(args: tuple[str, ...], executor: str):
    if not shutil.which("docker-compose"):
        pytest.fail("Debian's docker-compose is not installed (make check installs it)", False)
    services = _config(*args)
    for name in AIRFLOW_SERVICES | {"airflow-worker", "flower"}:
        assert services[name]["environment"]["AIRFLOW__CORE__EXECUTOR"] == executor, name
    assert services["airflow-worker"]["command"] == "celery worker"
