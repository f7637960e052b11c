from __future__ import annotations

import json
import subprocess

import pytest
from airflow.sdk import DAG

from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.manifest.pod_command import CALL_ENV, OUTPUT_DIR_ENV
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from tests.support.airflow_home import AIRFLOW
from tests.support.imports import heavy_modules_loaded_by


def _container(manifest):
    return manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]


def _env(manifest) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in _container(manifest)["env"]}


def test_importing_operators_loads_no_heavy_library():
    assert heavy_modules_loaded_by("import airflow_provider_jax.operators") == []


def test_tpu_dry_run(validate_jobset):
    op = JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v6e-16",
        num_slices=2,
        image="img:1",
        entrypoint="trainer.main:train",
        entrypoint_kwargs={"steps": 10},
        output_dir="gs://bucket/run",
        queue_name="q",
    )
    manifest = op.dry_run()
    validate_jobset(manifest)
    env = _env(manifest)
    assert json.loads(env[CALL_ENV])["entrypoint"] == "trainer.main:train"
    assert json.loads(env[CALL_ENV])["kwargs"] == {"steps": 10}
    assert env[OUTPUT_DIR_ENV] == "gs://bucket/run"
    assert env["JAX_NUM_PROCESSES"] == "8"
    assert env["MEGASCALE_NUM_SLICES"] == "2"
    assert manifest["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "q"
    assert manifest["metadata"]["labels"]["task_id"] == "train"


def test_gpu_dry_run(validate_jobset):
    op = JaxGpuJobOperator(
        task_id="train",
        accelerator="h100",
        gpus_per_node=8,
        num_nodes=4,
        image="img:1",
        command=["python3", "-m", "trainer"],
    )
    manifest = op.dry_run()
    validate_jobset(manifest)
    assert _container(manifest)["command"][-3:] == ["python3", "-m", "trainer"]
    assert _container(manifest)["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"] == 4


def test_templates_render_into_the_manifest():
    with DAG("templated", schedule=None):
        op = JaxTpuSliceOperator(
            task_id="train",
            accelerator="v5litepod-8",
            image="img:{{ params.tag }}",
            entrypoint="trainer:{{ params.fn }}",
            entrypoint_kwargs={"date": "{{ ds }}", "steps": 5},
            env={"RUN": "{{ ds }}"},
            output_dir="gs://bucket/{{ ds }}",
            labels={"team": "{{ params.team }}"},
            params={"tag": "v2", "fn": "train", "team": "ml"},
        )
    op.render_template_fields({"ds": "2026-11-22", "params": op.params})
    manifest = op.dry_run()
    env = _env(manifest)
    call = json.loads(env[CALL_ENV])
    assert _container(manifest)["image"] == "img:v2"
    assert call["entrypoint"] == "trainer:train"
    assert call["kwargs"] == {"date": "2026-11-22", "steps": 5}
    assert env["RUN"] == "2026-11-22"
    assert env[OUTPUT_DIR_ENV] == "gs://bucket/2026-11-22"
    assert manifest["metadata"]["labels"]["team"] == "ml"


def test_provider_is_listed():
    out = subprocess.run(
        [*AIRFLOW, "providers", "list", "--output", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "airflow-provider-jax" in {p["package_name"] for p in json.loads(out.stdout)}


def test_image_is_optional_locally_and_required_on_kubernetes(monkeypatch):
    base = {"task_id": "t", "accelerator": "tpu-v5litepod-8", "entrypoint": "m:f"}
    local = JaxTpuSliceOperator(**base, backend="local")
    container = local.dry_run()["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert container["spec"]["containers"][0]["image"] == "local-backend"
    with pytest.raises(ValueError, match=r"image is required on Kubernetes.*\[jax\] default_image"):
        JaxTpuSliceOperator(**base, backend="kubernetes")
    monkeypatch.setenv("AIRFLOW__JAX__DEFAULT_IMAGE", "us-docker.pkg.dev/p/r/jax:1")
    manifest = JaxTpuSliceOperator(**base, backend="kubernetes").dry_run()
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "us-docker.pkg.dev/p/r/jax:1"
