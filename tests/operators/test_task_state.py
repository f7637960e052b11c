"""The JobSet record in Airflow's task state store: what a try writes, and what a later try
makes of what it finds, including values it cannot read (a store shared with other code, or
a future release). The running-Airflow drill is in tests/e2e/test_fault_drills.py."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_jax.contract.backend import Started
from airflow_provider_jax.operators import task_state


class Store:
    """The accessor's surface (get, set with a retention), over a dict."""

    def __init__(self, **values: Any) -> None:
        self.values = dict(values)
        self.retention: dict[str, timedelta | None] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any, *, retention: timedelta | None = None) -> None:
        self.values[key] = value
        self.retention[key] = retention


class Ti:
    try_number = 2


def context(store: Store | None) -> dict[str, Any]:
    return {"task_state_store": store, "ti": Ti()} if store is not None else {"ti": Ti()}


RECORD = {"name": "train-1a2b", "namespace": "default", "uid": "u-1", "capacity_choice": 1,
          "try_number": 1}  # fmt: skip
LOG = logging.getLogger("test")


def test_a_try_records_its_jobset_and_the_next_says_it_reconnected(caplog):
    store = Store()
    started = Started("train-1a2b", "default", capacity_choice=1, uid="u-1")
    task_state.record(context(store), started, None, LOG)
    assert store.values["jobset"] == {**RECORD, "try_number": 2}
    assert store.retention["jobset"] is not None  # kept across tries (NEVER_EXPIRE)
    store.values["jobset"] = RECORD
    caplog.set_level(logging.INFO)
    before = task_state.recorded(context(store), LOG)
    assert before == task_state.Recorded(**RECORD)
    task_state.record(context(store), started, before, LOG)
    assert "Reconnected to the JobSet of try 1." in caplog.text


def test_a_gone_jobset_is_named_with_the_one_this_try_runs(caplog):
    caplog.set_level(logging.INFO)
    store = Store(jobset=RECORD)
    before = task_state.recorded(context(store), LOG)
    task_state.record(context(store), Started("train-1a2b", "default", uid="u-2"), before, LOG)
    assert "The JobSet of try 1 (uid u-1) is gone; this try runs" in caplog.text
    assert store.values["jobset"]["uid"] == "u-2"


@pytest.mark.parametrize(
    "value",
    ["u-1", 3, [], {"name": "x"}, {**RECORD, "extra": 1}, {**RECORD, "capacity_choice": "1"},
     {**RECORD, "uid": None}, {**RECORD, "try_number": True}],
)  # fmt: skip
def test_a_record_this_release_cannot_read_is_ignored_with_a_warning(value, caplog):
    assert task_state.recorded(context(Store(jobset=value)), LOG) is None
    assert "Ignoring the task state store's 'jobset' record" in caplog.text


def test_without_a_store_nothing_is_read_or_written():
    assert task_state.recorded(context(None), LOG) is None
    task_state.record(context(None), Started("a", "default"), None, LOG)  # no error
