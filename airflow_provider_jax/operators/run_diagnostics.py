"""What a JAX operator asks its pods to leave behind for a look inside the run
(``profile_steps``, ``debug_dump``), where it goes, and the links to it."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import is_template
from airflow_provider_jax.links.diagnostics import (
    DebugDumpLink,
    ProfileLink,
    folder_url,
    profile_url,
)
from airflow_provider_jax.runtime.output_paths import DEBUG, PROFILES, try_uri

LOCAL_DIAGNOSTICS = "airflow-jax-diagnostics"  # below the temp folder, locally without output_dir


@dataclass(frozen=True)
class Diagnostics:
    """``profile_steps`` and ``debug_dump``, as checked; ``output_dir`` is given at each use,
    since it is templated."""

    profile_steps: Sequence[int] | None = None  # (start, count)
    debug_dump: bool = False

    @property
    def wanted(self) -> bool:
        return bool(self.profile_steps or self.debug_dump)

    def check_place(self, task_id: str, output_dir: str | None, remote: bool) -> None:
        """A pod's own disk is gone with the pod: on Kubernetes they need an output_dir."""
        asked = [n for n in ("profile_steps", "debug_dump") if getattr(self, n)]
        if asked and output_dir is None and remote:
            raise ValueError(
                f"{task_id}: {' and '.join(asked)} write(s) to <output_dir>/"
                f"{PROFILES if self.profile_steps else DEBUG}, and this task has no output_dir "
                "on Kubernetes: give output_dir='gs://bucket/...' (a pod's own disk is gone "
                "with the pod)."
            )

    @staticmethod
    def folder(output_dir: str | None, jobset_name: str) -> str:
        """``output_dir``; locally without one, a folder of this JobSet's in the temp folder."""
        if output_dir is not None:
            return output_dir
        return f"{tempfile.gettempdir()}/{LOCAL_DIAGNOSTICS}/{jobset_name}"

    def call(self, output_dir: str | None, jobset_name: str, try_number: int) -> dict[str, Any]:
        """What the runtime's call carries for them: only the try when neither is asked for."""
        call: dict[str, Any] = {"try_number": try_number}
        if self.wanted:
            call["profile_steps"] = list(self.profile_steps) if self.profile_steps else None
            call["debug_dump"] = self.debug_dump
            call["diagnostics_dir"] = self.folder(output_dir, jobset_name)
        return call

    def links(self, output_dir: str | None, jobset_name: str, try_number: int) -> dict[str, str]:
        """The links to this try's profile and debug folders (empty for what was not asked)."""
        base = self.folder(output_dir, jobset_name)
        if is_template(base):
            return {}
        links = {}
        if self.profile_steps:
            template = settings.get("tensorboard_url")
            links[ProfileLink().xcom_key] = profile_url(
                template, try_uri(base, PROFILES, try_number)
            )
        if self.debug_dump:
            links[DebugDumpLink().xcom_key] = folder_url(try_uri(base, DEBUG, try_number))
        return links
