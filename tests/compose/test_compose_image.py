"""The image ``docker compose build`` makes (the Dockerfile, on the airflow stand-in): the
packages the tests test, at the lock's versions, and what the example DAGs and the Celery
stack import. Before, ``pip install`` took no constraints (jax, jaxlib and optax floated to
build day's newest), orbax-checkpoint was missing, and the newest celery (5.7.0) broke the
celery provider's import."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.docker_engine import DockerEngine
from tests.support.jobset_schema import REPO

pytestmark = pytest.mark.timeout(1800)  # the first run builds the stand-ins (once a machine)


def python_in(engine: DockerEngine, image: str, code: str) -> str:
    """``code`` run by the image's Python, with no network, as the image's user."""
    return engine.docker(
        "run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", code,
        timeout=300,
    )  # fmt: skip


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_package_the_lock_pins_is_at_its_version(
    docker_engine: DockerEngine, compose_image: str
):
    text = (REPO / "requirements" / "constraints.txt").read_text()
    pinned = {normalized(n): v for n, v in re.findall(r"^([\w.\-]+)==(\S+)", text, re.M)}
    installed = json.loads(
        python_in(
            docker_engine,
            compose_image,
            "import json, importlib.metadata as m; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))",
        )
    )
    off = {
        name: (version, pinned[normalized(name)])
        for name, version in installed.items()
        if normalized(name) in pinned and pinned[normalized(name)] != version
    }
    assert off == {}
    for name in ("jax", "jaxlib", "optax", "orbax-checkpoint", "celery", "flower", "redis"):
        assert normalized(name) in map(normalized, installed), name


def test_the_example_dags_and_the_celery_stack_import(
    docker_engine: DockerEngine, compose_image: str
):
    out = python_in(
        docker_engine,
        compose_image,
        "import jax, numpy, optax, orbax.checkpoint; "
        "import airflow.providers.celery.executors.celery_executor_utils; "
        "import airflow_provider_jax.operators; print('imported')",
    )
    assert out.strip().endswith("imported")
