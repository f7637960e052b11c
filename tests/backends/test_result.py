"""What a pod may make Airflow read: ``<output_dir>/result.json`` and nothing else, capped.

Pod code can write any termination message (no runtime bug needed). Each hostile message here
fails the task with a clear error and reads nothing, in both backends; the Kubernetes side runs
through the emulator, the local side through real processes.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from airflow_provider_jax.backends.kubernetes import KubernetesBackend, submit
from airflow_provider_jax.backends.local.backend import LocalBackend
from airflow_provider_jax.backends.result import ResultLost, ResultReader, ResultRejected
from airflow_provider_jax.contract import JobSettings
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.runtime.messages import success_message
from airflow_provider_jax.triggers.watch.events import JobSetEvent
from harness.jobsets import manifest
from harness.k8s_emulator import Emulator, PodRun, PodScript
from tests.support.jobset_schema import REPO

LOG = logging.getLogger(__name__)
SECRET = '{"private_key": "-----BEGIN PRIVATE KEY-----"}'  # JSON, so it would pass as a result


@pytest.fixture
def worker_secret(tmp_path: Path) -> Path:
    """A file only the Airflow worker should read: a mounted service-account key."""
    secret = tmp_path / "secrets" / "key.json"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    return secret


def hostile_uris(out: Path, secret: Path) -> dict[str, str]:
    return {
        "another local path": str(secret),
        "dot-dot out of output_dir": f"{out}/../secrets/key.json",
        "a file:// URI": f"file://{secret}",
        "another bucket": "gs://someone-elses-bucket/key.json",
        "not a string": 42,  # type: ignore[dict-item]
    }


def kubernetes_outcome(k8s: Emulator, out: Path, message: str, **settings):
    def script(pod: PodRun) -> PodScript:
        return PodScript(message=message if pod.slice_index == pod.host_index == 0 else "")

    k8s.script(script)
    cluster = KubernetesCluster()
    ref = submit(cluster.hook(), cluster, manifest(hosts=1), LOG)
    k8s.wait_for(lambda: (k8s.jobset(ref.name) or {}).get("status", {}).get("terminalState"), 20)
    event = JobSetEvent("success", ref.name, "default", ref.uid or "", "Completed", "done")
    backend = KubernetesBackend(
        JobSettings(ref.name, "default", LOG, output_dir=str(out), **settings)
    )
    return backend.complete(event.to_dict(), cluster.to_dict())


@pytest.mark.parametrize("case", list(hostile_uris(Path("/o"), Path("/s"))))
def test_kubernetes_a_result_named_outside_output_dir_is_never_read(
    k8s, tmp_path, worker_secret, case
):
    out = tmp_path / "out"
    uri = hostile_uris(out, worker_secret)[case]
    with pytest.raises(ResultRejected, match="outside output_dir") as rejected:
        kubernetes_outcome(k8s, out, json.dumps({"ok": True, "result_uri": uri}))
    assert "PRIVATE KEY" not in str(rejected.value)
    k8s.wait_for(lambda: not k8s.jobsets(), 10, "the JobSet to go")  # rejected, cleaned up


@pytest.mark.parametrize("case", ["another local path", "a file:// URI"])
def test_local_a_result_named_outside_output_dir_is_never_read(tmp_path, worker_secret, case):
    out = tmp_path / "out"
    op = JaxTpuSliceOperator(
        task_id="train",
        name="job",
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        image="ignored-locally",
        entrypoint="tests.support.programs:names_its_own_result",
        entrypoint_kwargs={"result_uri": hostile_uris(out, worker_secret)[case]},
        initialize_distributed=False,
        output_dir=str(out),
    )
    backend = LocalBackend(
        JobSettings("job", "default", LOG, output_dir=str(out), pythonpath=(str(REPO),))
    )
    with pytest.raises(ResultRejected, match="outside output_dir") as rejected:
        backend.wait(backend.start(build_jobset(op.build_spec(name="job"))))
    assert "PRIVATE KEY" not in str(rejected.value)


def test_the_result_at_output_dir_is_read(k8s, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text('{"loss": 0.1}')
    message = success_message(result_uri=f"{out}/result.json")
    assert kubernetes_outcome(k8s, out, message).result == {"loss": 0.1}


def test_an_oversized_result_fails_before_a_byte_is_read(k8s, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text(json.dumps("x" * 5000))
    message = success_message(result_uri=f"{out}/result.json")
    with pytest.raises(ResultRejected, match=r"is 5002 bytes, over the 4096-byte cap"):
        kubernetes_outcome(k8s, out, message, max_result_bytes=4096)


def test_a_symlink_at_output_dir_is_not_followed(tmp_path, worker_secret):
    """A pod that shares the filesystem could point result.json at the worker's secrets."""
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(worker_secret, out / "result.json")
    reader = ResultReader(str(out))
    with pytest.raises(ResultRejected, match="cannot be read as a plain file"):
        reader.from_message({"ok": True, "result_uri": f"{out}/result.json"}, LOG)


def test_an_oversized_gcs_result_is_refused_by_its_size(gcs_bucket, gcs_emulator):
    from google.cloud import storage

    storage.Client.create_anonymous_client().bucket(gcs_bucket).blob("run/result.json")
    client = storage.Client(project="test", credentials=None)
    client.bucket(gcs_bucket).blob("run/result.json").upload_from_string("1" * 2048)
    reader = ResultReader(f"gs://{gcs_bucket}/run", max_bytes=1024)
    with pytest.raises(ResultRejected, match="2048 bytes, over the 1024-byte cap"):
        reader.read()
    assert ResultReader(f"gs://{gcs_bucket}/run").read() == int("1" * 2048)


def test_a_function_whose_result_cannot_be_read_fails_instead_of_returning_none(tmp_path):
    """No message from the leader (a MultiKueue worker no connection reaches, a pod already
    gone) and nowhere else to read: an XCom of None would hide the loss."""
    with pytest.raises(ResultLost, match="no output_dir.*The task fails rather than return None"):
        ResultReader(None, expected=True).from_message(None, LOG)
    with pytest.raises(ResultLost, match=r"result\.json does not exist"):
        ResultReader(str(tmp_path), expected=True).from_message(None, LOG)
    # A command= program returns nothing: None is its result.
    assert ResultReader(None).from_message(None, LOG) == (None, None)
    assert ResultReader(str(tmp_path)).from_message(None, LOG) == (None, None)
    # A function that returned None says so in its message.
    ok = {"ok": True, "result": None}
    assert ResultReader(None, expected=True).from_message(ok, LOG) == (None, None)
