"""The local backend's stand-in for TPU capacity (``[jax] local_capacity_file``), and what the
runtime tells a process of its size."""

from __future__ import annotations

import json
import logging
import math
import os

import pytest

from airflow_provider_jax import runtime
from airflow_provider_jax.backends.local.capacity import LocalCapacity
from airflow_provider_jax.contract.elastic import ElasticSlices

LOG = logging.getLogger("tests.capacity")


def write(path, content: str) -> None:
    staged = path.with_suffix(".new")
    staged.write_text(content)
    os.replace(staged, path)


def test_the_file_says_how_many_slices_have_capacity(tmp_path):
    path = tmp_path / "capacity.json"
    capacity = LocalCapacity(str(path), LOG)
    assert capacity.slices() == math.inf  # no file: every slice
    write(path, json.dumps({"slices": 1}))
    assert capacity.slices() == 1
    write(path, json.dumps({"slices": 3}))
    assert capacity.slices() == 3
    path.unlink()
    assert capacity.slices() == math.inf
    assert LocalCapacity(None, LOG).slices() == math.inf


@pytest.mark.parametrize(
    "content",
    [
        '{"slices": -1}',
        '{"slices": true}',
        '{"slices": 1.5}',
        '{"slice": 1}',
        "[1]",
        "{",
        "",
        "[" * 100_000 + "]" * 100_000,  # deeper than Python's recursion limit
    ],
    ids=lambda content: content[:20],
)
def test_a_file_that_cannot_be_read_keeps_the_capacity_as_it_was(tmp_path, caplog, content):
    path = tmp_path / "capacity.json"
    write(path, json.dumps({"slices": 1}))
    capacity = LocalCapacity(str(path), LOG)
    assert capacity.slices() == 1
    write(path, content)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        assert capacity.slices() == 1
    assert "local_capacity_file" in caplog.text and "keeping the capacity" in caplog.text


def test_an_elastic_policy_shrinks_to_what_has_capacity_and_grows_only_to_full():
    policy = ElasticSlices(full=4, minimum=2).at(4)
    assert [policy.shrinks_to(n) for n in (0, 1, 2, 3, 4, 5)] == [None, None, 2, 3, None, None]
    smaller = policy.at(2)
    assert [smaller.grows(n) for n in (2, 3, 4, 5)] == [False, False, True, True]
    assert not policy.grows(4)


def test_the_runtime_tells_its_size_and_why_it_started(monkeypatch):
    monkeypatch.setenv("JAX_NUM_PROCESSES", "4")
    monkeypatch.setenv("AIRFLOW_JAX_HOSTS_PER_SLICE", "2")
    for name in (
        "AIRFLOW_JAX_RESTART_ATTEMPT",
        "AIRFLOW_JAX_IN_PLACE_ATTEMPT",
        "AIRFLOW_JAX_RESIZED",
    ):
        monkeypatch.delenv(name, raising=False)
    assert (runtime.num_slices(), runtime.start_reason()) == (2, None)
    monkeypatch.setenv("AIRFLOW_JAX_RESIZED", "shrunk")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    assert (runtime.num_slices(), runtime.start_reason()) == (1, "shrunk")
    monkeypatch.setenv("AIRFLOW_JAX_RESTART_ATTEMPT", "1")  # restarted at this size since
    assert runtime.start_reason() == "restart"
