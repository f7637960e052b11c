"""A MultiKueue manager connection's worker mapping: read, checked before anything is
submitted, and the message for a job whose result could not come back."""

from __future__ import annotations

import pytest

from airflow_provider_jax.hooks.multikueue import (
    MULTIKUEUE_CONTROLLER,
    check_before_submit,
    unreadable_result,
    worker_cluster,
    worker_connections,
)

EXTRAS = {"multikueue_workers": {"worker-1": "k8s_w1", "worker-2": None}}


def exists(conn_id: str) -> bool:
    return conn_id in {"k8s_w1"}


def test_a_mapped_worker_is_reached_through_its_connection():
    assert worker_cluster(EXTRAS, "worker-1").conn_id == "k8s_w1"
    assert worker_cluster(EXTRAS, "worker-2") is None
    assert worker_cluster({}, "worker-1") is None
    assert worker_connections({}) is None


@pytest.mark.parametrize(
    "mapping", [["worker-1"], {"worker-1": 3}, {"worker-1": ""}, "worker-1=k8s"]
)
def test_a_malformed_mapping_names_the_extra(mapping):
    with pytest.raises(ValueError, match="extra 'multikueue_workers' must map each"):
        worker_connections({"multikueue_workers": mapping})


def test_a_mapping_that_names_a_missing_connection_is_refused_before_submission():
    extras = {"multikueue_workers": {"worker-1": "k8s_w1", "worker-2": "k8s_nowhere"}}
    with pytest.raises(ValueError, match=r"names connections that do not exist: \['k8s_nowhere'\]"):
        check_before_submit(extras, "gs://b/run", exists)


def test_without_output_dir_every_worker_needs_a_connection():
    with pytest.raises(ValueError, match=r"worker cluster\(s\) \['worker-2'\].*Give output_dir"):
        check_before_submit(EXTRAS, None, exists)
    check_before_submit(EXTRAS, "gs://b/run", exists)  # result.json brings it back
    check_before_submit({"multikueue_workers": {"worker-1": "k8s_w1"}}, None, exists)
    check_before_submit({}, None, exists)  # not a manager, as far as the connection says


def test_a_multikueue_jobset_with_no_way_back_is_explained():
    assert "MultiKueue queue" in unreadable_result(MULTIKUEUE_CONTROLLER, {})
    assert unreadable_result(MULTIKUEUE_CONTROLLER, EXTRAS) is None
    assert unreadable_result(None, {}) is None
