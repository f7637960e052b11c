"""A JaxJobSpec as the manifest tests build one, and the parts of its JobSet they read."""

from __future__ import annotations

from airflow_provider_jax.manifest.names import jobset_name
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators.job_spec import airflow_labels


def spec(accelerator, num_slices=1, **kwargs) -> JaxJobSpec:
    name = jobset_name("dag", "train", "manual__2026-01-01", -1, accelerator, num_slices)
    return JaxJobSpec(
        name=name,
        accelerator=accelerator,
        image="us-docker.pkg.dev/p/r/jax:1",
        command=["python3", "train.py"],
        num_slices=num_slices,
        labels=airflow_labels("dag", "train", "manual__2026-01-01", -1, 1),
        **kwargs,
    )


def _rjob(manifest):
    (rjob,) = manifest["spec"]["replicatedJobs"]
    return rjob


def _pod(manifest):
    return _rjob(manifest)["template"]["spec"]["template"]["spec"]
