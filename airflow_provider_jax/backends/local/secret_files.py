"""Where the local backend finds the Kubernetes Secrets a job references: files laid out as a
Secret volume would be, ``<local_secrets_dir>/<secret>/<key>``, set by ``[jax]
local_secrets_dir`` (``AIRFLOW__JAX__LOCAL_SECRETS_DIR``). Point it at the folder of a mounted
Secret, or at files made for a demo; values never pass through the manifest."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.pods import PodPlan, SecretSource, plan_pods


class MissingSecret(LookupError):
    """A referenced Secret is not where the local backend looks for it."""


def secret_files(root: str | None) -> SecretSource:
    """A :data:`SecretSource` reading ``<root>/<secret>/<key>`` files."""

    def read(name: str) -> Mapping[str, str]:
        if not root:
            raise MissingSecret(
                f"the job references Secret {name!r}; on the local backend, set [jax] "
                f"local_secrets_dir to a folder holding {name}/<key> files."
            )
        folder = Path(root) / name
        if not folder.is_dir():
            raise MissingSecret(f"Secret {name!r}: no folder {folder} ([jax] local_secrets_dir).")
        return {
            f.name: f.read_text()
            for f in folder.iterdir()
            if f.is_file() and not f.name.startswith(".")
        }

    return read


def check_runs_locally(manifest: Mapping[str, Any], source: SecretSource) -> list[PodPlan]:
    """Fail before any process starts if a referenced Secret cannot be resolved here: the
    pods' env is resolved once, as each attempt will resolve it. Returns those pods."""
    for rjob in manifest["spec"]["replicatedJobs"]:
        for volume in rjob["template"]["spec"]["template"]["spec"].get("volumes", []):
            if "secret" in volume:
                raise MissingSecret(
                    f"Secret {volume['secret']['secretName']!r} is mounted as a volume, which "
                    "the local backend cannot do; pass it as env (SecretRef('env', ...)) to "
                    "run locally."
                )
    return plan_pods(manifest, secrets=source)
