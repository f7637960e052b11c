"""A Pathways JobSet on the local backend: its single controller alone (the example DAG
``pathways_training`` runs real JAX on 32 CPU devices, ``tests/dags/test_examples.py``)."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_jax import Pathways
from airflow_provider_jax.backends.local.pathways import single_controller
from airflow_provider_jax.exceptions import JaxCodeError
from tests.support.local_runs import LOG, manifest, run

PATHWAYS = {"pathways": Pathways(scratch_location="gs://bkt/scratch"), "num_slices": 2}


def test_only_the_head_runs_with_every_chip():
    local, line = single_controller(manifest("broken", accelerator="tpu-v5litepod-16", **PATHWAYS))
    (head,) = local["spec"]["replicatedJobs"]
    pod = head["template"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["jax"] and "initContainers" not in pod
    assert pod["containers"][0]["resources"]["limits"]["google.com/tpu"] == "32"
    assert "drives 32 CPU devices standing in for the 32 chips of 2 slice(s)" in line


def test_a_raise_in_the_head_fails_at_once_with_its_traceback(caplog):
    caplog.set_level(logging.INFO, logger=LOG.name)
    with pytest.raises(JaxCodeError) as failed:
        run("broken", max_restarts=2, **PATHWAYS)
    assert "[0/0] KeyError: 'missing-key'" in str(failed.value)
    assert 'raise KeyError("missing-key")' in str(failed.value)
    assert "a code error, no restart" in str(failed.value)  # a bug spends no restart
    assert any(m.startswith("Pathways, emulated locally") for m in caplog.messages)


def test_headless_has_nothing_to_run_here():
    headless = {**PATHWAYS, "pathways": Pathways("gs://bkt/scratch", headless=True)}
    with pytest.raises(ValueError, match="headless=True runs no program of its own"):
        run("broken", **headless)
