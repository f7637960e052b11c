"""Airflow provider that runs multi-host JAX jobs as JobSets (GKE TPU slices, multi-node GPU).

Importing this package must stay cheap: the scheduler imports DAG files every few seconds,
so nothing here pulls in jax, kubernetes or the google-cloud libraries.
"""

__version__ = "0.1.0"
