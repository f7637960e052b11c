"""The compose stack's tests: a Docker engine (the machine's, or one started for the tests,
``tests/support/docker_engine.py``) with the stand-in images loaded (``make compose-images``),
and the image ``docker compose build`` makes, built once for the run.
Any test that uses ``docker_engine`` is in the ``airflow_stack`` tier (``tests/conftest.py``):
``make check`` runs none of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.compose_stack import (
    IMAGE,
    ComposeStack,
    checkout,
    compose_images,
    remove_stale,
)
from tests.support.docker_engine import DockerEngine, engine


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    with engine() as running:
        remove_stale(running)
        compose_images(running)
        yield running


@pytest.fixture(scope="session")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout as a clone has it, for the stacks that write nothing to it."""
    return checkout(tmp_path_factory.mktemp("checkout"), "repository")


@pytest.fixture(scope="session")
def compose_image(docker_engine: DockerEngine, repository: Path) -> Iterator[str]:
    """``docker compose build``'s image (the Dockerfile on the airflow stand-in), by name."""
    ComposeStack(docker_engine, repository).compose("build", timeout=1200)
    yield IMAGE
    docker_engine.docker("image", "rm", "-f", IMAGE)
