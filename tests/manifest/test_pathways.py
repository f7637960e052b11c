"""Pathways: our JobSet against xpk's own renderer (recorded in tests/fixtures/xpk by
record_pathways.py), field for field except where pathways_build.py says why; and the values
that cannot work, refused at parse."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_provider_jax import Pathways
from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.pathways import IMAGE_REPOSITORY, JAX_TAG
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.manifest.status import leader_pod
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator

RECORDED = json.loads(
    (Path(__file__).parents[1] / "fixtures/xpk/pathways_jobsets.json").read_text()
)
XPK_SERVER = f"{IMAGE_REPOSITORY}/server:latest"
XPK_PROXY = f"{IMAGE_REPOSITORY}/proxy_server:latest"


def ours(inputs: dict[str, Any]) -> dict[str, Any]:
    """Our JobSet for the inputs xpk rendered."""
    split = lambda value: tuple((value or "").split())  # noqa: E731 - xpk splits on spaces
    pathways = Pathways(
        scratch_location=inputs["pathways_gcs_location"],
        server_image=inputs["server_image"] or XPK_SERVER,
        proxy_image=inputs["proxy_server_image"] or XPK_PROXY,
        headless=inputs["headless"],
        elastic_slices=inputs["elastic_slices"],
        max_slice_restarts=inputs["max_slice_restarts"],
        server_args=split(inputs["custom_pathways_server_args"]),
        proxy_args=split(inputs["custom_pathways_proxy_server_args"]),
        worker_args=split(inputs["custom_pathways_worker_args"]),
    )
    spec = JaxJobSpec(
        name=inputs["workload"],
        accelerator=parse_tpu(inputs["device"]),
        image="user-image",
        command=["python3", "-c", "pass"],
        num_slices=inputs["num_slices"],
        termination_grace_period=inputs["termination_grace_period_seconds"],
        priority_class_name=inputs["priority"],
        pathways=pathways,
    )
    return build_jobset(spec)


def pods(jobset: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["template"]["spec"]["template"] for r in jobset["spec"]["replicatedJobs"]}


def comparable(jobset: dict[str, Any]) -> dict[str, Any]:
    """What must be equal: without the differences pathways_build.py's docstring lists."""
    out = copy.deepcopy(jobset)
    out["metadata"] = {"name": out["metadata"]["name"]}  # labels, namespace: ours
    policy = out["spec"]["failurePolicy"]
    out["spec"]["failurePolicy"] = {"restartStrategy": policy["restartStrategy"]}
    head, worker = (r["template"]["spec"] for r in out["spec"]["replicatedJobs"])
    head.pop("podFailurePolicy", None)  # ours: a bug in the head fails at once
    head_pod = head["template"]["spec"]
    if "initContainers" in head_pod:  # the user container is ours; its Pathways env is xpk's
        user = head_pod.pop("containers")[0]
        head_pod["pathways_env"] = user["env"][:4]
    worker["template"]["metadata"].pop("labels", None)
    head["template"].pop("metadata", None)
    return out


@pytest.mark.parametrize(
    "case",
    RECORDED["cases"],
    ids=[
        f"{c['inputs']['device']}x{c['inputs']['num_slices']}-{i}"
        for i, c in enumerate(RECORDED["cases"])
    ],
)
def test_the_jobset_is_xpks(case: dict[str, Any]):
    assert comparable(ours(case["inputs"])) == comparable(case["jobset"])


def test_what_we_add_to_xpks():
    inputs = RECORDED["cases"][2]["inputs"]
    jobset = ours(inputs)
    head = pods(jobset)["pathways-head"]["spec"]
    user = head["containers"][0]
    env = {e["name"]: e.get("value") for e in user["env"]}
    assert env["JAX_PLATFORMS"] == "proxy" and env["AIRFLOW_JAX_PATHWAYS"] == "1"
    assert user["name"] == "jax" and user["securityContext"]["allowPrivilegeEscalation"] is False
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] == 3
    assert jobset["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "airflow-provider-jax"}


def test_defaults_are_pinned_and_the_scratch_follows_output_dir():
    op = JaxTpuSliceOperator(
        task_id="t",
        accelerator="v5p-16",
        image="img:1",
        entrypoint="m:f",
        output_dir="gs://bkt/runs/1",
        pathways=True,
        backend="kubernetes",
    )
    rm = pods(op.dry_run())["pathways-head"]["spec"]["initContainers"][1]
    assert rm["image"] == f"{IMAGE_REPOSITORY}/server:{JAX_TAG}"
    assert "--gcs_scratch_location=gs://bkt/runs/1/pathways" in rm["args"]
    assert op.plan.initialize_distributed is False


TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
TPU_GCS = TPU | {"output_dir": "gs://bkt/x"}
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("scratch_not_gcs", {"pathways": dict(scratch_location="/tmp/x")}, "must be a gs:// URI"),
    ("scratch_bad_bucket", {"pathways": dict(scratch_location="gs://A_B/x")}, "valid GCS"),
    (
        "local_output_on_k8s",
        {"pathways": True, "output_dir": "/data/x", "backend": "kubernetes"},
        "pathways scratch location '/data/x' must be a gs:// URI",
    ),
    (
        "with_distributed",
        {"pathways": True, "initialize_distributed": True},
        "initialize_distributed=True does not go with pathways=",
    ),
    (
        "elastic_over_slices",
        {"pathways": dict(elastic_slices=3), "num_slices": 2},
        "elastic_slices=3 is more than num_slices=2",
    ),
    ("image_untagged", {"pathways": dict(server_image="r.io/p/server")}, "tag or a digest"),
    ("proxy_untagged", {"pathways": dict(proxy_image="proxy")}, "proxy_image 'proxy' needs"),
    ("args_string", {"pathways": dict(worker_args="--a=1")}, "worker_args must be a list"),
    ("elastic_negative", {"pathways": dict(elastic_slices=-1)}, "elastic_slices must be"),
    ("pathways_string", {"pathways": "yes"}, "pathways must be True, False or Pathways"),
    (
        "no_scratch_on_k8s",
        {"pathways": True, "output_dir": None, "backend": "kubernetes"},
        "pathways= on Kubernetes needs a gs:// scratch location",
    ),
    ("name_too_long", {"pathways": True, "name": "n" * 40}, "pathways-head-0-0"),
]


@pytest.mark.parametrize(("kwargs", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_refused_at_parse(kwargs: dict[str, Any], message: str):
    with DAG("bad", schedule=None), pytest.raises((ValueError, TypeError), match=message):
        if isinstance(kwargs.get("pathways"), dict):  # Pathways(...) itself refuses some
            kwargs = kwargs | {"pathways": Pathways(**kwargs["pathways"])}
        JaxTpuSliceOperator(**TPU_GCS | kwargs)


def test_refused_on_gpus_and_in_the_decorator():
    with DAG("bad", schedule=None), pytest.raises(ValueError, match="pathways= runs TPU slices"):
        JaxGpuJobOperator(
            **TPU_GCS | {"accelerator": "h100-80gb-8", "num_nodes": 2, "pathways": True}
        )
    with DAG("bad", schedule=None), pytest.raises(ValueError, match="elastic_slices=2 is more"):

        @task.jax_tpu(
            accelerator="v6e-16",
            image="img",
            output_dir="gs://bkt/x",
            pathways=Pathways(elastic_slices=2),
        )
        def train() -> None: ...

        train()


def test_the_leader_is_the_head_not_slice_0s_first_worker():
    def pod(rjob: str) -> dict[str, Any]:
        labels = {
            "jobset.sigs.k8s.io/replicatedjob-name": rjob,
            "jobset.sigs.k8s.io/job-index": "0",
            "jobset.sigs.k8s.io/restart-attempt": "0",
        }
        annotations = {"batch.kubernetes.io/job-completion-index": "0"}
        return {"metadata": {"name": rjob, "labels": labels, "annotations": annotations}}

    assert leader_pod([pod("worker"), pod("pathways-head")])["metadata"]["name"] == "pathways-head"
    assert leader_pod([pod("slice")])["metadata"]["name"] == "slice"


def test_the_connection_can_point_the_default_images_at_a_mirror(monkeypatch):
    mirror = "europe-docker.pkg.dev/p/mirror/pathways/server:jax-0.10.2"
    extra = {"pathways_server_image": mirror, "in_cluster": False}
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": extra})
    )
    proxy = "r.io/p/proxy:v1"  # set on Pathways(...): it wins over the connection
    op = JaxTpuSliceOperator(**TPU_GCS, pathways=Pathways(proxy_image=proxy), backend="kubernetes")
    head = pods(build_jobset(op.build_spec(name="x")))["pathways-head"]["spec"]
    proxy_container, rm = head["initContainers"]
    assert (rm["image"], proxy_container["image"]) == (mirror, proxy)
    worker = pods(build_jobset(op.build_spec(name="x")))["worker"]["spec"]["containers"][0]
    assert worker["image"] == mirror


def test_without_a_connection_the_defaults_stand(monkeypatch):
    """In-cluster or kubeconfig access has no connection to read extras from."""
    monkeypatch.delenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", raising=False)
    op = JaxTpuSliceOperator(**TPU_GCS, pathways=True, backend="kubernetes")
    head = pods(build_jobset(op.build_spec(name="x")))["pathways-head"]["spec"]
    assert head["initContainers"][1]["image"] == f"{IMAGE_REPOSITORY}/server:{JAX_TAG}"
