from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_jax.manifest import pod_command
from airflow_provider_jax.manifest.pod_command import (
    python_call,
    runtime_bundle,
    split_pip_packages,
)


def test_bundle_extends_an_installed_provider(tmp_path):
    """In an image with the provider installed, the shipped runtime must not hide the rest."""
    bundle = tmp_path / "runtime.zip"
    bundle.write_bytes(base64.b64decode(runtime_bundle()))
    code = (
        f"import sys; sys.path.insert(0, {str(bundle)!r})\n"
        "import airflow_provider_jax.runtime.messages as m, airflow_provider_jax.manifest.accelerators as a\n"
        "print(m.__file__); print(a.__file__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    messages, accelerators = out.stdout.split()
    assert messages.startswith(str(bundle))
    assert not accelerators.startswith(str(bundle))


def test_bundle_is_deterministic_and_its_kept_copy_is_the_same_bundle():
    kept = Path(pod_command.__file__).parents[1] / "runtime" / "__pycache__"
    for old in kept.glob("bundle-*.b64"):
        old.unlink()
    runtime_bundle.cache_clear()
    built = runtime_bundle()  # compressed, then kept
    [copy] = kept.glob("bundle-*.b64")
    assert copy.read_text() == built
    runtime_bundle.cache_clear()
    assert runtime_bundle() == built  # read back
    copy.write_text("stale")  # a kept copy is only read under its own files' stamp
    stamp_changed = Path(pod_command.__file__).parents[1] / "runtime" / "env.py"
    os.utime(stamp_changed)
    runtime_bundle.cache_clear()
    assert runtime_bundle() == built
    assert not copy.exists()  # the older runtime's copy goes


def test_accelerator_matched_packages_are_dropped():
    kept, dropped = split_pip_packages(
        [
            "einops>=0.8",
            "jax[tpu]==0.6",
            "JAXLIB",
            "libtpu",
            "jax-cuda12-plugin",
            "x @ file:///x.whl",
        ]
    )
    assert kept == ["einops>=0.8", "x @ file:///x.whl"]
    assert dropped == ["jax[tpu]==0.6", "JAXLIB", "libtpu", "jax-cuda12-plugin"]


@pytest.mark.parametrize(
    "entry", ["--index-url=http://evil/simple", "-r requirements.txt", "./wheels/x.whl", "a b c"]
)
def test_pip_options_and_paths_are_refused(entry):
    """pip would read a leading '-' as an option (another index, a requirements file)."""
    with pytest.raises(ValueError, match=r"pip_packages\[1\] .*PEP 508.* PIP_INDEX_URL"):
        split_pip_packages(["einops", entry])


@pytest.mark.parametrize("entrypoint", ["module", "module:", ":fn", "a.b"])
def test_bad_entrypoints(entrypoint):
    with pytest.raises(ValueError, match="package.module:function"):
        python_call(entrypoint=entrypoint)
