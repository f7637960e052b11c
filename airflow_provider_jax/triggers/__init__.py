"""Triggers for deferrable JAX provider operators and sensors; import them from their modules.

:data:`CLASSPATHS` is every trigger class a trigger row may name: the triggerer imports a
row's classpath to resume a deferred task, so once released none moves. ``get_provider_info``
registers their modules from it, and ``tests/test_classpaths.py`` imports each.
"""

CLASSPATHS = (
    "airflow_provider_jax.triggers.jobset.JobSetTrigger",
    "airflow_provider_jax.triggers.orbax.OrbaxCheckpointTrigger",
    "airflow_provider_jax.triggers.orbax_events.OrbaxCheckpointEventTrigger",
    # a shared stream's producer, named in the event trigger's rows (Airflow 3.3)
    "airflow_provider_jax.triggers.orbax_producer.CheckpointDirProducer",
)
