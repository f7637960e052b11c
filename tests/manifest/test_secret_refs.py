"""secrets=: Kubernetes Secrets by reference. The value reaches the process in both backends
and appears nowhere else; a value Airflow masks is refused in env and in arguments."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path

import pytest
from airflow.providers.cncf.kubernetes.secret import Secret
from airflow.sdk.log import mask_secret

from airflow_provider_jax.backends.kubernetes import KubernetesBackend
from airflow_provider_jax.backends.local.backend import LocalBackend
from airflow_provider_jax.backends.local.secret_files import MissingSecret
from airflow_provider_jax.contract import JobSettings
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.secret_refs import SecretRef
from airflow_provider_jax.operators import JaxTpuSliceOperator
from harness.k8s_emulator import Emulator, ProcessRunner
from tests.support.jobset_schema import REPO

LOG = logging.getLogger("tests.secrets")
TOKEN = (
    "wandb-0123456789abcdef-token"  # a secret value: must never show up anywhere but the process
)
HF = "hf_zyxwvutsrqponmlk"
REFS = [
    SecretRef("env", "WANDB_API_KEY", "wandb", "api-key"),
    Secret("env", None, "hf"),  # the cncf provider's spelling: every key as env vars
]


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def operator(**kwargs) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id="train",
        name="secrets",
        accelerator="tpu-v5litepod-4",
        image="ignored-locally",
        entrypoint="tests.support.programs:secret_digests",
        entrypoint_kwargs={"names": ["WANDB_API_KEY", "HF_TOKEN"]},
        initialize_distributed=False,
        **kwargs,
    )


def spec_pod(manifest: dict) -> dict:
    return manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def test_references_render_as_kubernetes_would_read_them() -> None:
    refs = [*REFS, SecretRef("volume", "/var/secrets/gcs", "gcs-key", "key.json")]
    pod = spec_pod(build_jobset(operator(secrets=refs).build_spec(name="secrets")))
    (container,) = pod["containers"]
    assert {
        "name": "WANDB_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}},
    } in container["env"]
    assert container["envFrom"] == [{"secretRef": {"name": "hf"}}]
    assert {
        "name": "secret-gcs-key",
        "mountPath": "/var/secrets/gcs",
        "readOnly": True,
    } in container["volumeMounts"]
    assert {
        "name": "secret-gcs-key",
        "secret": {"secretName": "gcs-key", "items": [{"key": "key.json", "path": "key.json"}]},
    } in pod["volumes"]


@pytest.mark.parametrize(
    ("ref", "match"),
    [
        (lambda: SecretRef("env", "TOKEN", "Bad_Name", "k"), "not a valid Secret name"),
        (lambda: SecretRef("env", "TOKEN", "wandb"), "name the key"),
        (lambda: SecretRef("env", "1TOKEN", "wandb", "k"), "not an env var name"),
        (lambda: SecretRef("volume", "relative/path", "wandb"), "absolute mount path"),
        (lambda: SecretRef("file", "/x", "wandb"), "deploy_type"),
        (lambda: operator(secrets=["wandb"]), "SecretRef or"),
        (lambda: operator(secrets=REFS, env={"WANDB_API_KEY": "x"}), "both env and secrets"),
    ],
)
def test_bad_references_fail_at_parse(ref, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        ref()


def test_a_masked_value_never_enters_the_manifest() -> None:
    mask_secret(TOKEN)  # as Airflow does for a Connection's password or a sensitive Variable
    with pytest.raises(ValueError, match=r"env 'WANDB_API_KEY' holds a value Airflow masks"):
        operator(env={"WANDB_API_KEY": TOKEN}).build_spec(name="secrets")
    with pytest.raises(ValueError, match=r"argument 'config' holds a value Airflow masks"):
        JaxTpuSliceOperator(
            task_id="t",
            accelerator="tpu-v5litepod-4",
            image="i:1",
            entrypoint="m:f",
            entrypoint_kwargs={"config": {"wandb": {"key": f"prefix-{TOKEN}"}}},
        ).build_spec(name="secrets")


def test_local_backend_resolves_secrets_from_its_folder(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "secrets"
    (folder / "wandb").mkdir(parents=True)
    (folder / "wandb" / "api-key").write_text(TOKEN)
    (folder / "hf").mkdir()
    (folder / "hf" / "HF_TOKEN").write_text(HF)
    manifest = build_jobset(operator(secrets=REFS).build_spec(name="secrets"))
    settings = dict(name="secrets", namespace="default", log=LOG, pythonpath=(str(REPO),))
    backend = LocalBackend(JobSettings(**settings, local_secrets_dir=str(folder)))
    outcome = backend.wait(backend.start(manifest))
    assert outcome.result == {"WANDB_API_KEY": digest(TOKEN), "HF_TOKEN": digest(HF)}
    assert TOKEN not in json.dumps(manifest) and TOKEN not in capsys.readouterr().out

    unset = LocalBackend(JobSettings(**settings))
    with pytest.raises(MissingSecret, match=r"set \[jax\] local_secrets_dir"):
        unset.start(manifest)  # before any process starts


def test_kubernetes_backend_passes_secrets_by_reference(k8s: Emulator, caplog) -> None:
    k8s.runner = ProcessRunner(
        pythonpath=[str(REPO)], secrets={"wandb": {"api-key": TOKEN}, "hf": {"HF_TOKEN": HF}}
    )
    manifest = build_jobset(operator(secrets=REFS).build_spec(name="secrets"))
    backend = KubernetesBackend(
        JobSettings(name="secrets", namespace="default", log=LOG, deferrable=True)
    )
    trigger = backend.start(manifest).deferral.trigger
    event = asyncio.run(trigger.wait())
    outcome = backend.complete(event.to_dict())
    assert outcome.result == {"WANDB_API_KEY": digest(TOKEN), "HF_TOKEN": digest(HF)}
    assert TOKEN not in json.dumps(k8s.submitted) and TOKEN not in caplog.text
