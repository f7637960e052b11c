"""The JobSet CRD's v1alpha2 schema, for validating every manifest the tests see."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCHEMA_PATH = Path(
    os.environ.get(
        "JOBSET_CRD_SCHEMA", REPO.parent / "shared" / "schemas" / "jobset.x-k8s.io_jobsets.yaml"
    )
)


@functools.cache
def jobset_validator() -> Any | None:
    """A jsonschema validator for JobSet v1alpha2, or None when the CRD file is absent."""
    if not SCHEMA_PATH.is_file():
        return None
    import jsonschema
    import yaml

    crd = yaml.safe_load(SCHEMA_PATH.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])
