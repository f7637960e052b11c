"""The JobSet each try submitted, as Airflow's Rendered Templates view and ``airflow tasks
render`` show it: run for real with ``airflow dags test`` against the Kubernetes API emulator,
then read back from the metadata DB and compared with what the emulator received."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from airflow_provider_jax.manifest.pod_command import runtime_bundle
from airflow_provider_jax.operators.rendered_manifest import digest, for_display, manifest_yaml
from airflow_provider_jax.runtime.call import decode_call
from harness.jobsets import matching, succeed
from harness.k8s_emulator import Emulator
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import DAGS, env, run_dag
from tests.support.dag_tasks import tpu

DAY = "2024-03-05"
ROOMY = {"AIRFLOW__CORE__MAX_TEMPLATED_FIELD_LENGTH": "32768"}


def _container(jobset: dict) -> dict:
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]


def _rendered(home: AirflowHome, dag_id: str) -> dict[str, dict]:
    with sqlite3.connect(home.path / "airflow.db") as db:
        rows = db.execute(
            "SELECT task_id, rendered_fields FROM rendered_task_instance_fields WHERE dag_id = ?",
            (dag_id,),
        )
        return {task_id: json.loads(fields) for task_id, fields in rows}


def test_the_view_is_the_submitted_jobset_with_the_bundles_elided(
    k8s_emulator: Emulator, airflow_home: AirflowHome, tmp_path: Path
):
    k8s_emulator.reset()
    k8s_emulator.script(succeed({"ok": True}))
    run = run_dag(airflow_home, k8s_emulator, tmp_path, "jax_k8s_rendered", DAY, **ROOMY)
    assert run.states["plain"][0] == run.states["decorated"][0] == "success", run.proc.stdout[
        -3000:
    ]
    rendered = _rendered(airflow_home, "jax_k8s_rendered")
    for task_id in ("plain", "decorated"):
        (submitted,) = matching(run.submitted, task_id=task_id)
        text = rendered[task_id]["jobset_manifest"]
        shown, sent = yaml.safe_load(text), for_display(submitted)
        assert shown["spec"] == sent["spec"], task_id
        for key in ("name", "namespace", "labels", "annotations"):
            assert shown["metadata"][key] == sent["metadata"][key], (task_id, key)
        assert runtime_bundle()[:64] not in text
    plain = rendered["plain"]["jobset_manifest"]
    assert "RUN_DAY\n                value: '2024-03-05'" in plain  # rendered, not a template
    assert (
        "secretKeyRef:\n                    name: wandb\n                    key: api-key" in plain
    )
    # The decorated call asked for ``ds``: the view was built with the same context as the
    # submitted JobSet, down to the call's digest.
    (submitted,) = matching(run.submitted, task_id="decorated")
    call = decode_call(
        {e["name"]: e["value"] for e in _container(submitted)["env"] if "value" in e}
    )
    assert call["kwargs"] == {"steps": 5, "ds": DAY}
    assert digest(json.dumps(call, sort_keys=True)) in rendered["decorated"]["jobset_manifest"]
    assert k8s_emulator.jobsets() == []


def test_airflow_tasks_render_prints_the_same_manifest(
    k8s_emulator: Emulator, airflow_home: AirflowHome, tmp_path: Path
):
    out = airflow_home.airflow(
        "tasks",
        "render",
        "jax_k8s_rendered",
        "plain",
        DAY,
        dags_folder=DAGS,
        env={k: v for k, v in env(airflow_home, k8s_emulator, tmp_path).items() if "CONN" in k},
    )
    assert out.returncode == 0, out.stdout[-3000:]
    section = out.stdout.split("# property: jobset_manifest\n")[1]
    lines = section.splitlines()[1:]  # past the header's rule
    end = next((i for i, line in enumerate(lines) if line.startswith("# ---")), len(lines))
    jobset = yaml.safe_load("\n".join(lines[:end]))
    assert jobset["kind"] == "JobSet"
    assert jobset["metadata"]["labels"]["dag_id"] == "jax_k8s_rendered"
    env_vars = {e["name"]: e for e in _container(jobset)["env"]}
    assert env_vars["RUN_DAY"]["value"] == DAY
    assert env_vars["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "wandb"
    assert "valueFrom" not in env_vars["RUN_DAY"] and "value" not in env_vars["WANDB_API_KEY"]


def test_the_view_is_short_valid_and_hides_only_the_bundles(validate_jobset):
    op = tpu("t", command=None, entrypoint="train:main", entrypoint_kwargs={"steps": 3})
    jobset = op.dry_run()
    text = manifest_yaml(jobset)
    shown = yaml.safe_load(text)
    validate_jobset(shown)
    env_vars = {e["name"]: e.get("value") for e in _container(shown)["env"]}
    real = {e["name"]: e.get("value") for e in _container(jobset)["env"]}
    assert env_vars.pop("AIRFLOW_JAX_RUNTIME") == digest(real.pop("AIRFLOW_JAX_RUNTIME"))
    assert env_vars.pop("AIRFLOW_JAX_CALL") == digest(real.pop("AIRFLOW_JAX_CALL"))
    assert env_vars == real  # everything else is as submitted
    assert "values: [42, 124, 129, 130," in text  # the exit codes take lines, not a screen
    assert len(text) < len(json.dumps(jobset)) / 10
