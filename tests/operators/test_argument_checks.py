"""Careless and hostile values for every argument that becomes a Kubernetes field, a path, a
process's environment or a pip command line: each is refused at parse with the argument's
name and what would be valid, never a raw internal error, and nothing reaches a cluster.
(Rendered values are the bad-input table's ``ONCE_RENDERED`` rows, ``tests/test_bad_inputs.py``.)"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_provider_jax.manifest.secret_refs import SecretRef
from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "entrypoint": "m:f"}
GPU = {**TPU, "accelerator": "h100", "num_nodes": 2, "gpus_per_node": 8}
CASES: list[tuple[str, dict[str, Any], str]] = [
    # paths: the sensor's check, shared
    ("output_dir_s3", {"output_dir": "s3://bucket/x"}, "output_dir 's3://bucket/x': only GCS"),
    ("output_dir_relative", {"output_dir": "runs/x"}, "output_dir 'runs/x' is relative"),
    ("output_dir_no_bucket", {"output_dir": "gs:///x"}, "output_dir .*not a valid GCS bucket"),
    ("output_dir_bucket_case", {"output_dir": "gs://My_Bkt/x"}, "'My_Bkt' is not a valid GCS"),
    ("output_dir_bucket_google", {"output_dir": "gs://google-x/x"}, "not a valid GCS bucket"),
    ("output_dir_file_uri", {"output_dir": "file:///tmp/x"}, "output_dir .*only GCS"),
    ("output_dir_int", {"output_dir": 3}, "output_dir must be gs://"),
    # Kubernetes syntax
    ("label_key_space", {"labels": {"my team": "a"}}, "labels key 'my team' is not a qualified"),
    ("label_key_prefix", {"labels": {"Bad_Prefix/x": "a"}}, "labels key 'Bad_Prefix/x'"),
    ("label_value_long", {"labels": {"a": "x" * 64}}, r"labels\['a'\] value .* at most 63"),
    ("label_value_int", {"labels": {"a": 3}}, r"labels\['a'\] value 3 is not a valid label"),
    ("annotation_dict", {"annotations": {"a": {"b": 1}}}, r"annotations\['a'\] must be a string"),
    ("annotation_huge", {"annotations": {"a": "x" * 300_000}}, "annotations are .* 262144"),
    ("namespace_case", {"namespace": "ML"}, "namespace must be a DNS-1123 label"),
    ("namespace_long", {"namespace": "n" * 64}, "namespace must be a DNS-1123 label"),
    ("pull_policy_case", {"image_pull_policy": "always"}, "image_pull_policy must be one of"),
    ("resource_kind", {"container_resources": {"limit": {"cpu": "1"}}}, "keys must be"),
    ("resource_name", {"container_resources": {"limits": {"memroy": "1Gi"}}}, "'memroy' is not"),
    ("resource_quantity", {"container_resources": {"requests": {"cpu": "lots"}}}, "quantity"),
    ("resource_negative", {"container_resources": {"requests": {"cpu": -1}}}, "non-negative"),
    ("resource_not_map", {"container_resources": {"limits": "cpu=1"}}, "must map resource"),
    ("selector_value", {"node_selector": {"pool": "a b"}}, r"node_selector\['pool'\] value"),
    ("toleration_operator", {"tolerations": [{"key": "k", "operator": "In"}]}, "operator must"),
    ("toleration_effect", {"tolerations": [{"key": "k", "effect": "NoRun"}]}, "effect must"),
    ("toleration_field", {"tolerations": [{"key": "k", "valu": "v"}]}, "unknown fields"),
    ("toleration_exists_value", {"tolerations": [{"operator": "Exists", "value": "v"}]}, "empty"),
    ("toleration_seconds", {"tolerations": [{"key": "k", "tolerationSeconds": 5}]}, "NoExecute"),
    ("ttl_negative", {"ttl_seconds_after_finished": -1}, "ttl_seconds_after_finished must be"),
    ("ttl_text", {"ttl_seconds_after_finished": "1h"}, "ttl_seconds_after_finished must be"),
    ("service_account", {"service_account_name": "My SA"}, "service_account_name must be a DNS"),
    ("priority_class", {"priority_class_name": "High!"}, "priority_class_name must be a DNS"),
    # Kueue refuses a queue-name label that is not a DNS-1123 subdomain; a label value is <= 63
    ("queue_label", {"queue_name": "team a"}, "queue_name must be a DNS-1123 subdomain"),
    ("queue_empty", {"queue_name": ""}, "queue_name must be a DNS-1123 subdomain .*got ''"),
    ("queue_case", {"queue_name": "Team"}, "queue_name must be a DNS-1123 subdomain"),
    ("queue_long", {"queue_name": "q" * 64}, "queue_name must be a DNS-1123 .*at most 63"),
    # JobSet's failurePolicy.maxRestarts and ttlSecondsAfterFinished are int32
    (
        "restarts_int32",
        {"max_restarts": 2**31},
        r"max_restarts must be .* to 2147483647 \(an int32",
    ),
    ("ttl_int32", {"ttl_seconds_after_finished": 10**12}, "ttl_seconds_after_finished .*int32"),
    # types: a string where a list or mapping goes
    ("pip_string", {"pip_packages": "numpy"}, r"pip_packages must be a list .*got str 'numpy'"),
    ("override_string", {"pod_template_override": "x"}, "pod_template_override must be a map"),
    ("security_string", {"security_context": "privileged"}, "security_context must be a map"),
    ("labels_string", {"labels": "team=a"}, "labels must be a mapping"),
    ("env_list", {"env": ["A=1"]}, "env must be a mapping"),
    ("kwargs_list", {"entrypoint_kwargs": [1, 2]}, "entrypoint_kwargs must be a mapping"),
    ("tolerations_dict", {"tolerations": {"key": "k"}}, "tolerations must be a list"),
    ("volumes_string", {"volumes": "data"}, "volumes must be a list"),
    ("exit_codes_bool", {"restart_on_exit_codes": [True]}, r"restart_on_exit_codes\[0\] must"),
    # secrets: a list of SecretRef (or the cncf provider's Secret), nothing else
    ("secrets_one", {"secrets": SecretRef("env", "T", "s", "k")}, "secrets must be a list .*Sec"),
    ("secrets_int", {"secrets": 5}, r"secrets must be a list \(e.g. \[SecretRef"),
    ("secrets_zero", {"secrets": 0}, "secrets must be a list"),
    ("secrets_timedelta", {"secrets": datetime.timedelta(0)}, "secrets must be a list"),
    ("secrets_string", {"secrets": "token"}, "secrets must be a list"),
    ("secrets_item", {"secrets": ["token"]}, r"secrets\[0\] must be a SecretRef or .*Secret"),
    # an order that matters: no set, and no dict's keys or values
    ("pip_set", {"pip_packages": {"numpy"}}, "pip_packages must be a list or tuple: a set has no"),
    ("argv_frozenset", {"argv": frozenset({"-x"})}, "argv must be a list or tuple: a frozenset"),
    ("chain_set", {"impersonation_chain": {"a@p.iam"}}, "impersonation_chain must be a list or"),
    ("exit_codes_keys", {"restart_on_exit_codes": {7: 1}.keys()}, "restart_on_exit_codes .*order"),
    ("chain_empty", {"impersonation_chain": []}, "impersonation_chain must name a service account"),
    ("chain_blank", {"impersonation_chain": ["a@p.iam", ""]}, r"impersonation_chain\[1\] must be"),
    # Airflow renders a templated mapping's values, never its keys
    (
        "labels_key_jinja",
        {"labels": {"{{ params.k }}": "a"}},
        "labels has the key .*never its keys",
    ),
    ("env_key_jinja", {"env": {"{{ params.k }}": "a"}}, "env has the key .*never its keys"),
    ("kwargs_key_jinja", {"entrypoint_kwargs": {"{{ k }}": 5}}, "entrypoint_kwargs has the key"),
    ("kwargs_nested_key", {"entrypoint_kwargs": {"o": [{"{% if x %}": 1}]}}, "never its keys"),
    ("annotation_key_jinja", {"annotations": {"a/{{ k }}": "v"}}, "annotations has the key"),
    # injection and sizes
    ("pip_option", {"pip_packages": ["--index-url=http://x/simple"]}, r"pip_packages\[0\].*PEP"),
    ("pip_requirements_file", {"pip_packages": ["-r", "reqs.txt"]}, r"pip_packages\[0\]"),
    ("env_value_huge", {"env": {"BLOB": "x" * 200_000}}, "env value for 'BLOB' is 200000 bytes"),
    ("env_total_huge", {"env": {f"V{i}": "x" * 100_000 for i in range(12)}}, "at most 1048576"),
    # limits no cluster can run
    ("slices_absurd", {"num_slices": 10**9}, "a GKE cluster has at most 65000 nodes"),
    ("poll_zero", {"poll_interval": 0}, "poll_interval must be seconds > 0"),
    ("poll_negative", {"poll_interval": -5}, "poll_interval must be seconds > 0"),
]


@pytest.mark.parametrize(("kwargs", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_at_parse_with_the_argument_named(kwargs: dict[str, Any], message: str):
    with DAG("bad", schedule=None), pytest.raises((ValueError, TypeError), match=message):
        JaxTpuSliceOperator(**TPU | kwargs)


GPU_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("gpu_networks_string", {"gpu_networks": "net"}, "gpu_networks must be a list"),
    ("gpu_networks_set", {"gpu_networks": {"a", "b"}}, "gpu_networks must be a list or tuple"),
    ("gpu_networking_case", {"gpu_networking": "Auto"}, "gpu_networking must be one of"),
]


@pytest.mark.parametrize(
    ("kwargs", "message"), [c[1:] for c in GPU_CASES], ids=[c[0] for c in GPU_CASES]
)
def test_gpu_arguments_refused_at_parse_with_the_argument_named(kwargs, message):
    with DAG("bad", schedule=None), pytest.raises((ValueError, TypeError), match=message):
        JaxGpuJobOperator(**GPU | kwargs)


def test_the_largest_int32_is_taken():
    with DAG("good", schedule=None):
        op = JaxTpuSliceOperator(**TPU, max_restarts=2**31 - 1, ttl_seconds_after_finished=0)
    assert op.dry_run()["spec"]["failurePolicy"]["maxRestarts"] == 2**31 - 1


def test_gpu_nodes_beyond_any_cluster():
    with DAG("bad", schedule=None), pytest.raises(ValueError, match="at most 65000 nodes"):
        JaxGpuJobOperator(**GPU | {"num_nodes": 100_000})


def test_the_decorator_refuses_the_same():
    with DAG("bad", schedule=None), pytest.raises(TypeError, match="pip_packages must be a list"):

        @task.jax_tpu(accelerator="tpu-v6e-16", image="img", pip_packages="numpy")
        def train() -> None: ...

        train()


def test_the_decorators_jinja_message_offers_what_it_renders():
    """A decorator renders op_args and op_kwargs, and takes no command or entrypoint."""
    with DAG("bad", schedule=None), pytest.raises(ValueError, match="accelerator is not a") as err:

        @task.jax_tpu(accelerator="{{ params.accelerator }}", image="img")
        def train() -> None: ...

        train()
    offered = str(err.value).split("the templated ones:")[1]
    assert "op_kwargs" in offered and "argv" in offered
    assert not {"command", "entrypoint", "entrypoint_kwargs"} & set(
        offered.strip(" ).").split(", ")
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"labels": {"team": "{{ params.team }}"}, "namespace": "{{ params.ns }}"},
        {"output_dir": "gs://bucket/{{ ds_nodash }}", "env": "{{ params.env }}"},
        {"node_selector": {"pool": "a"}, "tolerations": [{"operator": "Exists"}]},
        {"container_resources": {"requests": {"cpu": 8, "memory": "32Gi", "nvidia.com/gpu": "1"}}},
        {"pip_packages": ["optax>=0.2", "pkg @ https://host/pkg.whl"]},
        {"entrypoint": "{{ params.entrypoint }}"},  # checked once rendered, as is a part
        {"entrypoint": "trainer.{{ params.model }}:train"},
        {"python": "/opt/venv/bin/python3.12"},
    ],
)
def test_good_and_templated_values_pass(kwargs: dict[str, Any]):
    with DAG("good", schedule=None):
        JaxTpuSliceOperator(**TPU | kwargs)
