"""What a JAX operator asks its pods to leave behind for a look inside the run
(``profile_steps``, ``debug_dump``), where it goes, and the links to it."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING, Any

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import as_bool, is_template
from airflow_provider_jax.links.diagnostics import (
    DebugDumpLink,
    ProfileLink,
    folder_url,
    profile_url,
)
from airflow_provider_jax.runtime.output_paths import DEBUG, PROFILES, try_uri
from airflow_provider_jax.runtime.profiling import check_profile_steps

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_jax.contract.backend import BackendTraits

LOCAL_DIAGNOSTICS = "airflow-jax-diagnostics"  # below the temp folder, locally without output_dir


class RunDiagnostics:
    """Mixed into the JAX operator: ``profile_steps`` and ``debug_dump``."""

    task_id: str
    output_dir: str | None
    backend_traits: BackendTraits
    profile_steps: tuple[int, int] | None
    debug_dump: bool
    _try_number: int = 0  # the try build_manifest renders for (0 at parse and in a dry run)

    def set_diagnostics(self, profile_steps: object, debug_dump: object) -> None:
        """Both checked now: their shape, and a place to write on Kubernetes."""
        self.profile_steps = None if profile_steps is None else check_profile_steps(profile_steps)
        self.debug_dump = as_bool("debug_dump", debug_dump)
        wanted = [n for n in ("profile_steps", "debug_dump") if getattr(self, n)]
        if wanted and self.output_dir is None and self.backend_traits.remote:
            raise ValueError(
                f"{self.task_id}: {' and '.join(wanted)} write(s) to <output_dir>/"
                f"{PROFILES if self.profile_steps else DEBUG}, and this task has no output_dir "
                "on Kubernetes: give output_dir='gs://bucket/...' (a pod's own disk is gone "
                "with the pod)."
            )

    def diagnostics_dir(self, jobset_name: str) -> str:
        """``output_dir``; locally without one, a folder of this JobSet's in the temp folder."""
        if self.output_dir is not None:
            return self.output_dir
        return f"{tempfile.gettempdir()}/{LOCAL_DIAGNOSTICS}/{jobset_name}"

    def diagnostics_call(self, jobset_name: str) -> dict[str, Any]:
        """What the runtime's call carries for them: only the try when neither is asked for."""
        call: dict[str, Any] = {"try_number": self._try_number}
        if self.profile_steps or self.debug_dump:
            call["profile_steps"] = list(self.profile_steps) if self.profile_steps else None
            call["debug_dump"] = self.debug_dump
            call["diagnostics_dir"] = self.diagnostics_dir(jobset_name)
        return call

    def diagnostics_links(self, context: Context, jobset_name: str) -> dict[str, str]:
        """The links to this try's profile and debug folders (empty for what was not asked)."""

        base = self.diagnostics_dir(jobset_name)
        if is_template(base):
            return {}
        try_number = context["ti"].try_number
        links = {}
        if self.profile_steps:
            template = settings.get("tensorboard_url")
            links[ProfileLink().xcom_key] = profile_url(
                template, try_uri(base, PROFILES, try_number)
            )
        if self.debug_dump:
            links[DebugDumpLink().xcom_key] = folder_url(try_uri(base, DEBUG, try_number))
        return links
