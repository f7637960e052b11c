"""``restart_strategy`` and ``local_checkpoint_size`` on the operators and decorators: refused at
parse when wrong, and the agent's image taken from the cluster's connection once rendered."""

from __future__ import annotations

import json

import pendulum
import pytest
from airflow.sdk import dag, task

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator

AGENT = "registry.example.com/jobset/in-place-restart-agent:v0.12.0"


def tpu(**kwargs):
    return JaxTpuSliceOperator(
        task_id="train", accelerator="v5e-16", image="img:1", command=["python3", "t.py"],
        backend="kubernetes", **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"restart_strategy": "in-place"}, "restart_strategy must be one of"),
        ({"local_checkpoint_size": "64GB"}, "local_checkpoint_size must be a positive"),
        ({"local_checkpoint_size": "1Ti"}, "does not fit in the memory"),
        ({"restart_strategy": "in_place", "pathways": True, "output_dir": "gs://bucket/run"},
         "does not go with pathways"),
        ({"local_checkpoint_size": "1Gi", "pathways": True, "output_dir": "gs://bucket/run"},
         "does not go with pathways"),
    ],
)  # fmt: skip
def test_bad_values_fail_at_parse_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tpu(**kwargs)


def test_gpu_jobs_and_the_decorators_take_them_too():
    gpu = JaxGpuJobOperator(
        task_id="g", accelerator="h100-80gb-8", num_nodes=2, image="img:1", command=["x"],
        restart_strategy="in_place", local_checkpoint_size="8Gi",
    )  # fmt: skip
    assert gpu.dry_run()["spec"]["failurePolicy"]["restartStrategy"] == "InPlaceRestart"

    @dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False)
    def bad() -> None:
        @task.jax_tpu(accelerator="v5e-16", image="img", restart_strategy="fast")
        def train() -> int:
            return 1

        train()

    with pytest.raises(ValueError, match="restart_strategy must be one of"):
        bad()


def test_the_agent_image_comes_from_the_connection_once_rendered(monkeypatch):
    """At parse (and in a dry run) the agent's name and release stand in; a try reads the
    Kubernetes connection's extra, and without one fails before anything is created."""
    op = tpu(restart_strategy="in_place", kubernetes_conn_id="k8s_mirror")
    agent = op.dry_run()["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert agent["initContainers"][0]["image"] == "in-place-restart-agent:v0.12.0"
    with pytest.raises(ValueError, match="in_place_restart_agent_image"):
        op.build_spec(name="train-1")
    extra = {"in_place_restart_agent_image": AGENT, "multi_tier_checkpointing": True}
    monkeypatch.setenv(
        "AIRFLOW_CONN_K8S_MIRROR", json.dumps({"conn_type": "kubernetes", "extra": extra})
    )
    spec = op.build_spec(name="train-1")
    assert spec.restart_agent_image == AGENT and spec.multi_tier_checkpointing
