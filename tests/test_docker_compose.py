"""docker-compose.yaml: no Docker engine here, so check its shape and let Debian's
docker-compose validate it (installed by .ci/run)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent


def test_stack_shape():
    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert {
        "postgres",
        "airflow-init",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
    } <= set(services)
    common = compose["x-airflow-common"]
    assert common["build"] == "."
    assert "./dags:/opt/airflow/dags" in common["volumes"]
    assert common["environment"]["AIRFLOW__JAX__DEFAULT_BACKEND"] == "local"
    assert "FROM apache/airflow:" in (REPO / "Dockerfile").read_text()


@pytest.mark.skipif(
    not shutil.which("docker-compose"), reason="Debian's docker-compose not installed"
)
def test_docker_compose_config_validates():
    subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yaml"), "config", "--quiet"],
        check=True,
        cwd=REPO,
    )
