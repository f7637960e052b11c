"""Provider metadata that Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax import __version__

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
                "python-modules": [
                    "airflow_provider_jax.triggers.orbax",
                    "airflow_provider_jax.triggers.orbax_events",
                    "airflow_provider_jax.triggers.jobset",
                ],
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
        "config": {
            "jax": {
                "description": "Defaults for the JAX provider.",
                "options": {
                    "default_backend": {
                        "description": "Where JAX jobs run when an operator names no backend: "
                        "``kubernetes`` submits a JobSet, ``local`` runs the same JobSet as local "
                        "processes with JAX on the CPU.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "local",
                        "default": "kubernetes",
                    },
                    "default_image": {
                        "description": "The image a JAX task runs when it names none (its "
                        "image= argument). Unset: Kubernetes tasks must name one; the local "
                        "backend needs none.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "us-docker.pkg.dev/my-project/training/jax:latest",
                        "default": "",
                    },
                    "max_result_bytes": {
                        "description": "The largest leader result read into XCom, in bytes. "
                        "Results live in the metadata database; write large outputs to "
                        "output_dir and return their paths.",
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": "65536",
                        "default": "1048576",
                    },
                    "local_secrets_dir": {
                        "description": "Where the local backend reads the Kubernetes Secrets "
                        "a job references (secrets=): <dir>/<secret>/<key> files, as a Secret "
                        "volume lays them out. Unset: referencing a Secret locally is an error.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "/run/secrets/jax",
                        "default": "",
                    },
                    "local_accelerators": {
                        "description": "What the local backend's processes compute on. "
                        "``auto``: a GPU job's processes get this machine's NVIDIA GPUs "
                        "(gpus_per_node each, by CUDA_VISIBLE_DEVICES) when it has enough, and "
                        "the CPU stands in when it has none. ``cpu``: the CPU always stands in. "
                        "TPU jobs always run on the CPU locally.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "cpu",
                        "default": "auto",
                    },
                    "resume_settle_seconds": {
                        "description": "A deferred task's trigger fires no sooner than this "
                        "after the task deferred: Airflow 3.3 fails a try resumed before the "
                        "scheduler saw its worker exit on defer() (apache/airflow#72716). 0 "
                        "where no scheduler runs the task (airflow dags test).",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "0",
                        "default": "10",
                    },
                    "max_log_streams": {
                        "description": "The most pod log streams one triggerer (or one "
                        "blocking task) holds open at once. Each holds a connection, its TLS "
                        "read buffer and a long-lived API server request. Past it, "
                        "a job's log waits its turn, and a job that ends first shows its last "
                        "lines. 0: only the last lines, at each job's end.",
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": "200",
                        "default": "1000",
                    },
                    "tensorboard_url": {
                        "description": "Your TensorBoard (or XProf) URL for a run's output_dir, "
                        "with {output_dir} where the URL-quoted directory goes. A task whose "
                        "output_dir holds TensorBoard event files when it succeeds gets a "
                        "TensorBoard link. Unset: no link, and no listing.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://tensorboard.example.com/?logdir={output_dir}",
                        "default": "",
                    },
                },
            }
        },
    }
