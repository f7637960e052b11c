"""Test-wide setup: an isolated AIRFLOW_HOME, and the shared GCS/Orbax fixtures."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="airflow-jax-tests-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

pytest_plugins = ["tests.support.orbax_fixtures"]
