"""The JobSet a try submits, shown as YAML in the task's "Rendered Templates" and by
``airflow tasks render``: what a platform engineer would otherwise ``kubectl get -o yaml``.

It is built when Airflow renders the task's templates, before ``execute()``, from the same
pure builder ``execute()`` submits with, so the view matches the cluster object of that try.
The bundled runtime and the shipped call (which may carry a decorated function's source) are
elided to a digest; secrets are never in a manifest, only ``secretKeyRef`` references.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from airflow_provider_jax.manifest.pod_command import RUNTIME_ENV, SITE_ENV
from airflow_provider_jax.runtime.call import CALL_ENV, CHUNK_ENV

MANIFEST_FIELD = "jobset_manifest"
_ELIDED = (RUNTIME_ENV, SITE_ENV, CALL_ENV, CHUNK_ENV)  # names, or prefixes, of env values to elide


def digest(value: str) -> str:
    """A short stand-in that still tells two runtimes or two calls apart."""
    sha = hashlib.sha256(value.encode()).hexdigest()[:12]
    return f"<elided: {len(value.encode())} bytes, sha256 {sha}>"


def _containers(manifest: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for replicated in manifest.get("spec", {}).get("replicatedJobs", []):
        pod = replicated["template"]["spec"]["template"]["spec"]
        yield from pod.get("initContainers", [])
        yield from pod.get("containers", [])


def for_display(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``manifest`` with the runtime zip and the shipped call elided."""
    shown = copy.deepcopy(dict(manifest))
    for container in _containers(shown):
        for var in container.get("env", []):
            if "value" in var and var["name"].startswith(_ELIDED):
                var["value"] = digest(var["value"])
    return shown


def manifest_yaml(manifest: Mapping[str, Any]) -> str:
    """Block-style YAML in the manifest's own key order; lists of scalars (exit codes, argv)
    stay on one flow line so the view stays short."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def sequence(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
        flow = bool(data) and not any(isinstance(item, dict | list) for item in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, sequence)
    return yaml.dump(
        for_display(manifest), Dumper=Dumper, sort_keys=False, width=100, allow_unicode=True
    )


def shown_manifest(build: Callable[[], dict[str, Any]]) -> str | None:
    """The YAML of the JobSet ``build()`` makes, for the rendered view; None when the rendered
    values are wrong (``execute()`` builds it again and fails the task with the reason). A view
    longer than ``[core] max_templated_field_length`` is cut by Airflow, which says so in the
    view itself: no log line on every run."""
    try:
        return manifest_yaml(build())
    except (ValueError, TypeError):
        return None
