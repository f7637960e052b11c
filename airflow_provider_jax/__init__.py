"""Airflow provider that runs multi-host JAX jobs as JobSets (GKE TPU slices, multi-node GPU).

Importing this package must stay cheap: the scheduler imports DAG files every few seconds,
so nothing here pulls in jax, kubernetes or the google-cloud libraries. The values a DAG file
passes to an operator are importable from here and load only when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it; imported on first use (PEP 562).
_LAZY = {
    "Data": "airflow_provider_jax.manifest.data_inputs",
    "Pathways": "airflow_provider_jax.manifest.pathways",
    "SecretRef": "airflow_provider_jax.manifest.secret_refs",
    "Storage": "airflow_provider_jax.manifest.named_storage",
}
__all__ = ["Data", "Pathways", "SecretRef", "Storage", "__version__"]

if TYPE_CHECKING:
    from airflow_provider_jax.manifest.data_inputs import Data
    from airflow_provider_jax.manifest.named_storage import Storage
    from airflow_provider_jax.manifest.pathways import Pathways
    from airflow_provider_jax.manifest.secret_refs import SecretRef


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
