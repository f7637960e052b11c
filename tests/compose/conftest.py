"""The compose stack's tests: a Docker engine (the machine's, or one started for the tests,
``tests/support/docker_engine.py``) with the stand-in images loaded (``make compose-images``).
Any test that uses ``docker_engine`` is in the ``airflow_stack`` tier (``tests/conftest.py``):
``make check`` runs none of them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.compose_stack import compose_images
from tests.support.docker_engine import DockerEngine, engine


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    with engine() as running:
        compose_images(running)
        yield running
