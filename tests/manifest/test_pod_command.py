from __future__ import annotations

import base64
import subprocess
import sys

import pytest

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


def test_bundle_is_deterministic():
    runtime_bundle.cache_clear()
    first = runtime_bundle()
    runtime_bundle.cache_clear()
    assert runtime_bundle() == first


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
