"""Deprecated path, kept for one release: import ``SecretRef`` from ``airflow_provider_jax``.

The module moved to ``airflow_provider_jax/manifest/secret_refs.py`` with the manifest builder.
"""

from __future__ import annotations

import warnings

from airflow_provider_jax.manifest.secret_refs import SecretRef

__all__ = ["SecretRef"]

warnings.warn(
    "airflow_provider_jax.secret_refs is deprecated; use `from airflow_provider_jax import "
    "SecretRef` (it will be removed in the next release).",
    DeprecationWarning,
    stacklevel=2,
)
