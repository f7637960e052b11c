"""Provider metadata that Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax import __version__
from airflow_provider_jax.settings import SECTION, config_section
from airflow_provider_jax.triggers import CLASSPATHS as TRIGGER_CLASSPATHS

PACKAGE_NAME = "airflow-provider-jax"


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": PACKAGE_NAME,
        "name": "JAX",
        "description": "Run multi-host JAX training on Kubernetes (GKE TPU slices and multi-node "
        "GPU jobs) as JobSets, with a local backend for laptops and tests.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "JAX",
                "external-doc-url": "https://docs.jax.dev/",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": "JAX",
                "python-modules": [
                    "airflow_provider_jax.operators.job_operator",
                    "airflow_provider_jax.operators.tpu",
                    "airflow_provider_jax.operators.gpu",
                ],
            }
        ],
        "hooks": [
            {
                "integration-name": "JAX",
                "python-modules": [
                    "airflow_provider_jax.hooks.cluster",
                    "airflow_provider_jax.hooks.jobset",
                    "airflow_provider_jax.hooks.gke",
                ],
            }
        ],
        "triggers": [
            {
                "integration-name": "JAX",
                "python-modules": list(
                    dict.fromkeys(path.rpartition(".")[0] for path in TRIGGER_CLASSPATHS)
                ),
            }
        ],
        "extra-links": [
            "airflow_provider_jax.links.jobset.JobSetWorkloadLink",
            "airflow_provider_jax.links.jobset.JobSetLogsLink",
            "airflow_provider_jax.links.jobset.KueueEventsLink",
            "airflow_provider_jax.links.tensorboard.TensorBoardLink",
            "airflow_provider_jax.links.diagnostics.ProfileLink",
            "airflow_provider_jax.links.diagnostics.DebugDumpLink",
        ],
        "task-decorators": [
            {
                "class-name": "airflow_provider_jax.decorators.jax_tpu.jax_tpu_task",
                "name": "jax_tpu",
            },
            {
                "class-name": "airflow_provider_jax.decorators.jax_gpu.jax_gpu_task",
                "name": "jax_gpu",
            },
        ],
        "sensors": [
            {"integration-name": "JAX", "python-modules": ["airflow_provider_jax.sensors.orbax"]}
        ],
        "config": {SECTION: config_section()},
    }
