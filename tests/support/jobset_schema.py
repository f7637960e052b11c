"""The JobSet CRD's v1alpha2 schema, for validating every manifest the tests see: taken from
the JobSet release the project pins (``tools/control-plane/versions.env``, the one the real
control plane is built from), through Go's module cache (``go mod download``, as the control
plane's build does). A test that needs it and cannot have it fails, naming what is missing;
none skips."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CRD_IN_MODULE = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"


@functools.cache
def schema_path() -> Path:
    """The CRD file: ``$JOBSET_CRD_SCHEMA`` where set (another release, by hand), else the
    pinned module's, downloaded into Go's module cache the first time."""
    if given := os.environ.get("JOBSET_CRD_SCHEMA"):
        return Path(given)
    from harness.real_cluster.build import versions
    from harness.real_cluster.manifests import module_dir

    version = versions()["JOBSET_VERSION"]
    if shutil.which("go") is None:
        raise RuntimeError(
            f"the JobSet CRD comes from the Go module sigs.k8s.io/jobset@{version} (the release "
            "tools/control-plane/versions.env pins), and `go` is not on PATH: install Go 1.25+ "
            "(Debian: golang-go; or https://go.dev/dl), or point JOBSET_CRD_SCHEMA at the CRD."
        )
    try:
        return module_dir("sigs.k8s.io/jobset", version) / CRD_IN_MODULE
    except subprocess.CalledProcessError as err:
        raise RuntimeError(
            f"`go mod download sigs.k8s.io/jobset@{version}` failed: {err.stderr.strip()}"
        ) from None


@functools.cache
def jobset_validator() -> Any:
    """A jsonschema validator for JobSet v1alpha2."""
    import jsonschema
    import yaml

    path = schema_path()
    if not path.is_file():
        raise RuntimeError(f"no JobSet CRD at {path}")
    crd = yaml.safe_load(path.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])
