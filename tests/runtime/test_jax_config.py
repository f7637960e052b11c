"""``jax_config=``: JAX options every process sets before the call, checked at parse. (The
option the issue asked to add end to end; it touched three package files: its declaration,
the signature written from it, and the runtime that sets it.)"""

from __future__ import annotations

import pytest

from airflow_provider_jax.exceptions import JaxJobFailed
from tests.support.local_runs import operator, run


def test_every_process_runs_with_the_options_set():
    result, _ = run(
        "jax_options",
        jax_config={"jax_enable_x64": True, "jax_default_matmul_precision": "highest"},
        entrypoint_kwargs={"names": ["jax_enable_x64", "jax_default_matmul_precision"]},
        timeout_s=120,
    )
    assert result == {"jax_enable_x64": True, "jax_default_matmul_precision": "highest"}


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"enable_x64": True}, r"jax_config names JAX options as jax.config.update takes them"),
        ({"jax_debug_nans": {1, 2}}, r"jax_config\['jax_debug_nans'\] must be JSON"),
        (["jax_enable_x64"], r"jax_config must be a mapping"),
    ],
)
def test_a_value_the_pods_cant_set_is_refused_at_parse(value, error):
    with pytest.raises((ValueError, TypeError), match=error):
        operator("jax_options", jax_config=value)


def test_an_option_jax_refuses_fails_the_job_naming_it():
    with pytest.raises(JaxJobFailed, match=r"jax_config\['jax_no_such_option'\].*JAX refused"):
        run("jax_options", jax_config={"jax_no_such_option": 1},
            entrypoint_kwargs={"names": []}, timeout_s=120)  # fmt: skip
