"""Where a JAX job runs: two implementations (``kubernetes``, ``local/``) of the interface in
:mod:`airflow_provider_jax.contract`, which this namespace re-exports so that
``from airflow_provider_jax.backends import JobSettings`` keeps working."""

from airflow_provider_jax import contract
from airflow_provider_jax.contract import *  # noqa: F403 - the same names, for old imports

__all__ = contract.__all__
