"""What both JAX decorators share: their operator arguments are checked when the function is
decorated, since a mapped call (``.expand``) makes its task only when it runs."""

from __future__ import annotations

import pytest
from airflow.sdk import DAG, task


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"num_slices": "2"}, "num_slices must be an integer >= 1, got '2'"),
        ({"secrets": 5}, "secrets must be a list"),
        ({"gpus_per_node": 8}, r"has no GPU nodes \(gpus_per_node\)"),
        ({"entrypoint": "m:f"}, "entrypoint do not go with a decorated function"),
    ],
)
def test_a_mapped_decorated_tasks_arguments_are_checked_at_parse(given, message):
    with pytest.raises((ValueError, TypeError), match=message), DAG("d", schedule=None):

        @task.jax_tpu(accelerator="tpu-v6e-16", image="img", **given)
        def trial(lr: float) -> None: ...

        trial.expand(lr=[0.1, 0.2])
