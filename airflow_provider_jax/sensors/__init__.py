"""Sensors of the JAX provider. Cheap to import: storage clients load only when a sensor runs."""

from airflow_provider_jax.sensors.orbax import OrbaxCheckpointSensor

__all__ = ["OrbaxCheckpointSensor"]
