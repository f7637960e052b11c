"""Triggers for deferrable JAX provider operators and sensors; import them from their modules."""
