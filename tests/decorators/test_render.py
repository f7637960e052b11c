"""Decorator behaviour up to the manifest: what travels, and what fails before anything runs."""

from __future__ import annotations

import hashlib
import inspect

import pendulum
import pytest
from airflow.sdk import dag, task

from airflow_provider_jax.exceptions import JaxCodeError
from airflow_provider_jax.runtime.call import CHUNKS_ENV, PLAIN_LIMIT, decode_call
from tests.support.local_runs import run_operator


def _env(manifest) -> dict[str, str]:
    container = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def _build(fn_factory):
    ops = []

    @dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False)
    def d():
        ops.append(fn_factory().operator)

    d()
    return ops[0]


def test_source_and_arguments_travel_as_json(validate_jobset):
    def factory():
        @task.jax_tpu(accelerator="tpu-v6e-16", image="img", pip_packages=["jax[tpu]", "einops"])
        def train(steps: int, lr: float = 0.1):
            import jax

            return {"steps": steps, "devices": jax.device_count()}

        return train(5, lr=0.5)

    op = _build(factory)
    manifest = op.dry_run()
    validate_jobset(manifest)
    call = decode_call(_env(manifest))
    assert call["function"] == "train"
    assert call["kwargs"] == {"steps": 5, "lr": 0.5}
    assert call["source"].startswith("def train(steps: int, lr: float = 0.1):")
    assert "@task" not in call["source"]
    assert call["pip_packages"] == ["einops"]  # the image's accelerator-matched JAX wins
    assert op.plan.pip_packages == ("einops",)


def test_gpu_decorator(validate_jobset):
    def factory():
        @task.jax_gpu(accelerator="h100", gpus_per_node=8, num_nodes=2, image="img")
        def train():
            return 1

        return train()

    manifest = _build(factory).dry_run()
    validate_jobset(manifest)
    assert manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"] == 2


def test_non_json_argument_fails_at_parse_naming_it():
    def factory():
        @task.jax_tpu(accelerator="v6e-4", image="img")
        def train(data):
            return data

        return train({1, 2})

    with pytest.raises(ValueError, match=r"argument 'data' of train\(\) must be JSON-serializable"):
        _build(factory)


def test_upstream_xcom_is_a_placeholder_until_run():
    def factory():
        @task
        def upstream() -> int:
            return 3

        @task.jax_tpu(accelerator="v6e-4", image="img")
        def train(steps: int):
            return steps

        return train(upstream())

    call = decode_call(_env(_build(factory).dry_run()))
    assert call["kwargs"] == {"steps": "<PlainXComArg>"}


def test_large_call_round_trips_through_chunks(tmp_path, monkeypatch):
    # Hex digests compress about 2x, like real code with data tables: several chunks.
    body = "\n".join(
        f"    x{i} = '{hashlib.sha256(str(i).encode()).hexdigest()}'" for i in range(6000)
    )
    module = tmp_path / "big_train.py"
    module.write_text(
        "from airflow.sdk import task\n\n\n"
        "@task.jax_tpu(accelerator='v6e-4', image='img')\n"
        f"def train():\n{body}\n    return x5999\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import big_train

    def factory():
        return big_train.train()

    env = _env(_build(factory).dry_run())
    assert int(env[CHUNKS_ENV]) >= 2
    assert all(len(v) < 128 * 1024 for v in env.values())
    call = decode_call(env)
    assert len(call["source"]) > PLAIN_LIMIT
    assert call["source"].rstrip().endswith("return x5999")


# Every kind of parameter Python has, called as the function would be called directly.
def _every_kind(factory_args, factory_kwargs):
    def factory():
        @task.jax_tpu(accelerator="tpu-v5litepod-4", image="img", initialize_distributed=False)
        def kinds(a, /, b, *rest, c, d=4, **extra):
            return {"a": a, "b": b, "rest": list(rest), "c": c, "d": d, "extra": extra}

        return kinds(*factory_args, **factory_kwargs)

    return factory


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        (
            (1, 2, 3, 5),
            {"c": 6, "z": 7},
            {"a": 1, "b": 2, "rest": [3, 5], "c": 6, "d": 4, "extra": {"z": 7}},
        ),
        ((1,), {"b": 2, "c": 3}, {"a": 1, "b": 2, "rest": [], "c": 3, "d": 4, "extra": {}}),
        (
            (1, 2),
            {"c": 3, "d": 8, "y": {"k": [1]}},
            {"a": 1, "b": 2, "rest": [], "c": 3, "d": 8, "extra": {"y": {"k": [1]}}},
        ),
    ],
    ids=["var-positional", "keywords", "var-keyword"],
)
def test_every_parameter_kind_gets_what_a_direct_call_gives_it(args, kwargs, expected):
    op = _build(_every_kind(args, kwargs))
    assert op.python_callable(*args, **kwargs) == expected  # the direct call, for reference
    assert run_operator(op).result == expected


def test_arguments_that_do_not_fit_the_signature_fail_at_parse():
    with pytest.raises(TypeError, match="'a' parameter is positional only"):
        _build(_every_kind((), {"a": 1, "b": 2, "c": 3}))


def test_a_decorated_functions_traceback_names_the_dag_file_and_its_own_lines():
    def factory():
        @task.jax_tpu(accelerator="tpu-v5litepod-4", image="img", backend="local")
        def fails():
            x = 1
            raise ValueError(f"bad batch {x}")

        return fails()

    op = _build(factory)
    raising = inspect.getsourcelines(op.python_callable)
    line = raising[1] + next(i for i, text in enumerate(raising[0]) if "raise ValueError" in text)
    with pytest.raises(JaxCodeError) as failed:
        run_operator(op)
    assert f'File "{__file__}", line {line}, in fails' in str(failed.value)
    assert 'raise ValueError(f"bad batch {x}")' in str(failed.value)
    assert "__airflow_jax_source__" not in str(failed.value)


def test_argv_reaches_a_decorated_main_argv_as_the_docs_show_it():
    """``@task.jax_tpu(argv=[...])`` on ``def main(argv)``: Airflow binds the call at parse,
    and argv's value comes from the runtime, as for an entrypoint."""

    def factory():
        @task.jax_tpu(accelerator="tpu-v5litepod-4", image="img", argv=["--steps=3", "x"])
        def main(argv, scale: int = 1):
            return {"argv": argv[1:], "scale": scale}

        return main(scale=2)

    op = _build(factory)
    assert "argv" not in op.op_kwargs
    assert run_operator(op).result == {"argv": ["--steps=3", "x"], "scale": 2}
