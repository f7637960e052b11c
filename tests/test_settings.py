"""The ``[jax]`` settings, declared once (``airflow_provider_jax/settings.py``): a misspelt key
gets "did you mean", a bad value is refused naming the key, both at a DAG's parse; and the
provider's config section is the declaration."""

from __future__ import annotations

import re

import pytest
from airflow.sdk import DAG

from airflow_provider_jax import settings
from airflow_provider_jax.get_provider_info import get_provider_info
from airflow_provider_jax.operators import JaxTpuSliceOperator

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "command": ["python3"]}
BAD = [
    (
        "LOCAL_ACCELERATOR",
        "cpu",
        r"\[jax\] local_accelerator is not a setting.*'local_accelerators'",
    ),
    ("TENSORBOARD_URI", "https://x/", r"\[jax\] tensorboard_uri .*did you mean 'tensorboard_url'"),
    (
        "LOCAL_ACCELERATORS",
        "CPU",
        r"local_accelerators must be one of \('auto', 'cpu'\), got 'CPU' \(did you mean 'cpu'\?\)",
    ),
    ("DEFAULT_BACKEND", "Local", r"default_backend must be one of .*did you mean 'local'"),
    (
        "TENSORBOARD_URL",
        "https://tb/?logdir={output_dir}&run={run}",
        r"tensorboard_url: .*\['run'\]; the only one filled in is \{output_dir\}",
    ),
    ("TENSORBOARD_URL", "tb.example.com/{output_dir}", r"tensorboard_url: .*not an http\(s\) URL"),
    ("TENSORBOARD_URL", "https://tb/{output_dir", r"tensorboard_url: .*not a valid template"),
    ("METRICS_PREFIX", "jax\n", r"metrics_prefix = 'jax\\n' has whitespace"),
    ("MAX_RESULT_BYTES", "1MiB", r"max_result_bytes must be an integer"),
    ("MAX_LOG_STREAMS", "-1", r"max_log_streams must be a finite number >= 0"),
    ("RESUME_SETTLE_SECONDS", "nan", r"resume_settle_seconds must be a finite number >= 0"),
    # An empty value is unset only where the default is empty: an empty prefix would fail
    # the task after its training, when the first metric is sent.
    ("METRICS_PREFIX", "", r"\[jax\] metrics_prefix: '' is not a StatsD name"),
    ("DEFAULT_IMAGE", "My Image", r"\[jax\] default_image: the image 'My Image' is not a valid"),
    ("IN_PLACE_RESTART_AGENT_IMAGE", "agent image", r"\[jax\] in_place_restart_agent_image: "),
    ("TENSORBOARD_URL", "https://tb/?d={output_dir:d}", r"tensorboard_url: .*can't be filled in"),
    ("TENSORBOARD_URL", "https://tb/?d={output_dir!x}", r"tensorboard_url: .*can't be filled in"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_a_bad_setting_fails_the_dag_at_parse(monkeypatch, key, value, message):
    monkeypatch.setenv(f"AIRFLOW__JAX__{key}", value)
    with DAG("bad", schedule=None), pytest.raises(ValueError, match=message):
        JaxTpuSliceOperator(**TPU)


def test_good_settings_parse_to_their_types(monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW__JAX__TENSORBOARD_URL", "https://tb.example.com/?logdir={output_dir}"
    )
    monkeypatch.setenv("AIRFLOW__JAX__MAX_RESULT_BYTES", "65536")
    monkeypatch.setenv("AIRFLOW__JAX__RESUME_SETTLE_SECONDS", "0")
    assert settings.get("max_result_bytes") == 65536
    assert settings.get("resume_settle_seconds") == 0.0
    assert settings.get("local_accelerators") == "auto"  # the declared default
    with DAG("good", schedule=None):
        JaxTpuSliceOperator(**TPU)


def test_the_config_section_is_the_declaration():
    options = get_provider_info()["config"]["jax"]["options"]
    assert set(options) == set(settings.SETTINGS)
    for key, setting in settings.SETTINGS.items():
        assert options[key]["default"] == setting.default
        assert options[key]["type"] == setting.kind
        setting.parse(key, setting.example)  # every example is a valid value
        setting.parse(key, setting.default)


def test_the_settings_page_is_the_declaration():
    from tests.support.docs_pages import REPO

    rows = dict(
        re.findall(
            r"^\| `([a-z_]+)` \| [^|]+ \| ([^|]+) \|",
            (REPO / "docs" / "settings.md").read_text(),
            re.M,
        )
    )
    assert set(rows) == set(settings.SETTINGS)
    for key, setting in settings.SETTINGS.items():
        assert rows[key].strip() == (f"`{setting.default}`" if setting.default else "(unset)")
