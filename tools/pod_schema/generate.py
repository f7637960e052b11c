"""Write ``airflow_provider_jax/manifest/pod_template_schema.json``: the pod template's
structural schema as JobSet's CRD carries it (Kubernetes' own core/v1 types), less its
descriptions. ``manifest/pod_schema.py`` checks nested arguments against it at parse.

    python -m tools.pod_schema.generate [CRD] [--check]

CRD defaults to ``../shared/schemas/jobset.x-k8s.io_jobsets.yaml``. ``--check`` exits 1 when
the shipped file differs from what the CRD gives (``tests/manifest/test_pod_schema.py`` runs
it), so a JobSet upgrade that changes the pod's types cannot go unnoticed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CRD = REPO.parent / "shared" / "schemas" / "jobset.x-k8s.io_jobsets.yaml"
OUT = REPO / "airflow_provider_jax" / "manifest" / "pod_template_schema.json"
# What the API server's structural validation reads; descriptions and the rest are left out.
KEPT = ("type", "properties", "items", "required", "enum", "additionalProperties", "format",
        "pattern", "maximum", "minimum", "maxLength", "maxItems",
        "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields")  # fmt: skip


def pod_template(crd: dict[str, Any]) -> dict[str, Any]:
    """The stripped schema of ``spec.replicatedJobs[].template.spec.template``."""
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    node = version["schema"]["openAPIV3Schema"]
    for step in ("spec", "replicatedJobs", "[]", "template", "spec", "template"):
        node = node["items"] if step == "[]" else node["properties"][step]
    return _strip(node)


def _strip(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in KEPT:
        if key not in node:
            continue
        value = node[key]
        if key == "properties":
            value = {name: _strip(sub) for name, sub in sorted(value.items())}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            value = _strip(value)
        out[key] = value
    return out


def render(crd_path: Path) -> str:
    import yaml

    schema = pod_template(yaml.safe_load(crd_path.read_text()))
    return json.dumps(schema, separators=(",", ":"), sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    paths = [a for a in argv if not a.startswith("--")]
    text = render(Path(paths[0]) if paths else CRD)
    if "--check" in argv:
        if OUT.read_text() != text:
            print(f"{OUT} is stale: run python -m tools.pod_schema.generate", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
