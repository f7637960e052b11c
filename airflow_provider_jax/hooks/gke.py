"""JobSet hooks for GKE: the google provider's GKE Kubernetes hooks, which authenticate every
call with a token minted from the Google connection (impersonation chain included)."""

from __future__ import annotations

from airflow.providers.google.cloud.hooks.kubernetes_engine import (
    GKEKubernetesAsyncHook,
    GKEKubernetesHook,
)

from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations, JobSetOperations


class GKEJobSetHook(JobSetOperations, GKEKubernetesHook):
    """:class:`~airflow_provider_jax.hooks.jobset.JobSetHook` for a GKE cluster endpoint."""


class GKEAsyncJobSetHook(AsyncJobSetOperations, GKEKubernetesAsyncHook):
    """:class:`~airflow_provider_jax.hooks.jobset.AsyncJobSetHook` for a GKE cluster endpoint."""
