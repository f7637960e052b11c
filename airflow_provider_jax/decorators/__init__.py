"""TaskFlow decorators ``@task.jax_tpu`` and ``@task.jax_gpu``, registered through the
provider's ``task-decorators``."""
