"""The bad-input table: malformed accelerators, names, env, images, results, templates and
checkpoint paths each get a clear error at the earliest point that can know, and leave no
cluster object behind.

- At parse (constructing the operator is what the DAG processor runs): everything that does
  not depend on a template or on the pods. Nothing is sent to the cluster.
- Once rendered, before any call to the cluster: the task fails without using its retries.
- In the pods (a result only exists once the leader returns; only kubelet knows whether an
  image can be pulled): the task fails with the cause, and its JobSet is deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG, task

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from harness.k8s_emulator import Emulator, ProcessRunner
from tests.operators.dags.bad_inputs import MISSING_IMAGE
from tests.support.airflow_home import AirflowHome
from tests.support.dag_runs import Run, run_dag
from tests.support.jobset_schema import REPO

TPU = {"task_id": "t", "accelerator": "tpu-v6e-16", "image": "img", "command": ["python3"]}
GPU = {**TPU, "accelerator": "h100", "num_nodes": 2, "gpus_per_node": 8}


@dataclass(frozen=True)
class Bad:
    id: str
    build: Callable[[], Any]
    message: str


def tpu(**kwargs: Any) -> Callable[[], Any]:
    return lambda: JaxTpuSliceOperator(**(TPU | kwargs))


def gpu(**kwargs: Any) -> Callable[[], Any]:
    return lambda: JaxGpuJobOperator(**(GPU | kwargs))


def sensor(checkpoint_dir: Any) -> Callable[[], Any]:
    return lambda: OrbaxCheckpointSensor(task_id="wait", checkpoint_dir=checkpoint_dir)


def decorated_with(**kwargs: Any) -> Callable[[], Any]:
    def build() -> Any:
        @task.jax_tpu(accelerator="tpu-v6e-16", image="img", **kwargs)
        def train() -> None: ...

        return train()

    return build


def decorated_call(value: Any) -> Callable[[], Any]:
    def build() -> Any:
        @task.jax_tpu(accelerator="tpu-v6e-16", image="img")
        def train(data: Any) -> None: ...

        return train(data=value)

    return build


AT_PARSE = [
    Bad("unknown_tpu", tpu(accelerator="tpu-v9-17"), "Unknown TPU accelerator"),
    Bad("no_such_slice", tpu(accelerator="tpu-v6e-17"), "no v6e slice has 17 chips.*'tpu-v6e-16'"),
    Bad("bad_shape", tpu(accelerator="v5p-4x4x10"), "multiple of 4.*tpu-v5p-4x4x8"),
    Bad(
        "multislice_single_host",
        tpu(accelerator="tpu-v5p-8", num_slices=2),
        "GKE's multislice needs multi-host",
    ),
    Bad(
        "gpu_networking",
        gpu(gpu_networking="fast"),
        "gpu_networking must be one of \\('auto', 'none'\\)",
    ),
    Bad("unknown_topology", tpu(accelerator="v5litepod-4x5"), r"GKE offers only.*v5litepod-4x4"),
    Bad("gpu_on_tpu_operator", tpu(accelerator="h100"), "use JaxGpuJobOperator"),
    Bad("tpu_on_gpu_operator", gpu(accelerator="tpu-v6e-8"), "use JaxTpuSliceOperator"),
    Bad("chips_per_host", tpu(chips_per_host=8), r"valid chips_per_host for it: \[4\]"),
    Bad("unknown_gpu", gpu(accelerator="h1000"), r"Unknown GPU accelerator 'h1000'.*'h100'"),
    Bad("gpus_per_node", gpu(gpus_per_node=3), "not gpus_per_node=3"),
    Bad("zero_slices", tpu(num_slices=0), "num_slices must be an integer >= 1"),
    Bad("name_not_dns", tpu(name="Train_Run"), "must be a DNS-1035 label"),
    Bad("name_too_long", tpu(name="t" * 60), "Use at most"),
    Bad("env_float", tpu(env={"LR": 0.1}), "env value for 'LR' must be a string, got float"),
    Bad("env_reserved", tpu(env={"JAX_PROCESS_ID": "3"}), "which the provider sets"),
    Bad("env_bad_name", tpu(env={"BAD NAME": "1"}), "not a valid environment variable name"),
    Bad("image_missing", tpu(image=""), "image must be a non-empty string"),
    Bad("image_invalid", tpu(image="Jax:Latest"), "not a valid image reference"),
    Bad("command_string", tpu(command="python train.py"), "command must be a list"),
    Bad(
        "kwargs_not_json",
        tpu(command=None, entrypoint="m:f", entrypoint_kwargs={"data": {1, 2}}),
        r"entrypoint_kwargs\['data'\] must be JSON-serializable",
    ),
    Bad("entrypoint_form", tpu(command=None, entrypoint="module.f"), "package.module:function"),
    Bad("no_program", tpu(command=None), "exactly one of command or entrypoint"),
    Bad("unknown_backend", tpu(backend="ray"), "backend must be one of"),
    Bad("restart_code_zero", tpu(restart_on_exit_codes=[0]), "exit codes 1-255 .0 is success"),
    Bad("progress_timeout_zero", tpu(progress_timeout=0), "progress_timeout must be seconds > 0"),
    Bad(
        "grace_period_text",
        tpu(termination_grace_period="30s"),
        "termination_grace_period must be an integer >= 1",
    ),
    Bad(
        "progress_timeout_command",
        tpu(progress_timeout=60),
        "progress_timeout works with report.. calls, which need the runtime",
    ),
    Bad(
        "total_steps_command",
        tpu(total_steps=100),
        "total_steps works with report.. calls, which need the runtime",
    ),
    Bad(
        "total_steps_zero",
        tpu(command=None, entrypoint="train:main", total_steps=0),
        "total_steps must be a positive integer",
    ),
    Bad(
        "profile_steps_command",
        tpu(profile_steps=(10, 5), output_dir="gs://bucket/o"),
        "profile_steps works with report.. calls, which need the runtime",
    ),
    Bad(
        "profile_steps_shape",
        tpu(command=None, entrypoint="train:main", profile_steps=10, output_dir="gs://bucket/o"),
        r"profile_steps must be \(start, count\): two integers",
    ),
    Bad(
        "profile_steps_negative",
        tpu(
            command=None, entrypoint="train:main", profile_steps=(-1, 5), output_dir="gs://bucket/o"
        ),
        r"profile_steps must be \(start, count\).*start >= 0",
    ),
    Bad(
        "profile_steps_too_many",
        tpu(
            command=None,
            entrypoint="train:main",
            profile_steps=(0, 101),
            output_dir="gs://bucket/o",
        ),
        "count from 1 to 100",
    ),
    Bad(
        "profile_steps_no_output_dir",
        tpu(command=None, entrypoint="train:main", profile_steps=(0, 5), backend="kubernetes"),
        "profile_steps write.s. to <output_dir>/profiles, and this task has no output_dir",
    ),
    Bad(
        "debug_dump_no_output_dir",
        tpu(command=None, entrypoint="train:main", debug_dump=True, backend="kubernetes"),
        "debug_dump write.s. to <output_dir>/debug, and this task has no output_dir",
    ),
    Bad(
        "debug_dump_text",
        tpu(command=None, entrypoint="train:main", debug_dump="yes", output_dir="gs://bucket/o"),
        "debug_dump must be",
    ),
    Bad("on_finish_action", tpu(on_finish_action="keep"), "on_finish_action must be one of"),
    Bad("stream_logs", tpu(stream_logs="workers"), "stream_logs must be one of"),
    Bad("zero_nodes", gpu(num_nodes=0), "num_nodes must be an integer >= 1"),
    Bad("negative_gpus", gpu(gpus_per_node=-8), "gpus_per_node must be an integer >= 1"),
    Bad("gpu_slices", gpu(num_slices=2), "use num_nodes"),
    Bad(
        "decorator_argument_not_json",
        decorated_call({1, 2}),
        r"argument 'data' of train\(\) must be JSON-serializable",
    ),
    # Round 10's list: what a careless or hostile user still got through
    Bad("env_nul", tpu(env={"A": "x\0y"}), "env value for 'A' holds a NUL byte"),
    Bad("command_nul", tpu(command=["python3", "a\0b"]), "command argument holds a NUL byte"),
    Bad(
        "env_runtime_call", tpu(env={"AIRFLOW_JAX_CALL": "{}"}), r"env sets \['AIRFLOW_JAX_CALL'\]"
    ),
    Bad("env_provider_prefix", tpu(env={"AIRFLOW_JAX_X": "1"}), "are the provider's own"),
    Bad("label_managed_by", tpu(labels={"app.kubernetes.io/managed-by": "me"}), "labels sets"),
    Bad("label_identity", tpu(labels={"task_id": "other"}), r"labels sets \['task_id'\]"),
    Bad("label_queue", tpu(labels={"kueue.x-k8s.io/queue-name": "q"}), "use queue_name="),
    Bad(
        "annotation_managed",
        tpu(annotations={"jax.airflow.apache.org/deferred-by-try": "1"}),
        "annotations sets",
    ),
    Bad("entrypoint_spaces", tpu(command=None, entrypoint="my mod:train"), "Python identifiers"),
    Bad("entrypoint_colons", tpu(command=None, entrypoint="a:b:c"), "one ':'"),
    Bad("entrypoint_digit", tpu(command=None, entrypoint="1pkg:f"), "package.module:function"),
    Bad("python_empty", tpu(command=None, entrypoint="m:f", python=""), "python must be one"),
    Bad("python_args", tpu(command=None, entrypoint="m:f", python="python3 -u"), "without spaces"),
    Bad("accelerator_jinja", tpu(accelerator="{{ params.acc }}"), "accelerator is not a templated"),
    Bad("gpu_accelerator_jinja", gpu(accelerator="{{ params.g }}"), "accelerator is not a templ"),
    Bad("queue_jinja", tpu(queue_name="{{ params.q }}"), "queue_name is not a templated field"),
    Bad(
        "selector_jinja",
        tpu(node_selector={"pool": "{{ params.pool }}"}),
        "node_selector is not a templated field.*the templated ones: image, command",
    ),
    Bad(
        "sensor_min_step_bool",
        lambda: OrbaxCheckpointSensor(task_id="w", checkpoint_dir="/c", min_step=True),
        "min_step must be a non-negative int",
    ),
    Bad(
        "decorator_entrypoint",
        decorated_with(entrypoint="m:f"),
        "entrypoint do not go with a decorated",
    ),
    Bad("decorator_command", decorated_with(command=["x"]), "command do not go with a decorated"),
    Bad("checkpoint_dir_s3", sensor("s3://bucket/ckpt"), "only GCS is supported"),
    Bad("checkpoint_dir_relative", sensor("ckpt/run1"), "is relative"),
    Bad("checkpoint_dir_bucket", sensor("gs://My_Bucket/ckpt"), "not a valid GCS bucket name"),
    Bad("checkpoint_dir_no_bucket", sensor("gs:///ckpt"), r"is not a valid GCS bucket name"),
    # Round 12's list (#72): values aimed at the last round's options, and their pairs
    Bad("checkpoint_dir_line_feed", sensor("gs://bucket/run\n"), "holds a control character"),
    Bad("output_dir_line_feed", tpu(output_dir="gs://bucket/run\n"), "holds a control char"),
    Bad("argv_set", tpu(command=None, entrypoint="m:f", argv={"--a", "--b"}), "a set has no order"),
    Bad("command_set", tpu(command={"python3"}), "command must be a list or tuple"),
    Bad("command_empty_program", tpu(command=[""]), "command must start with the program"),
    Bad("queue_timeout_huge", tpu(queue_timeout=1e12), "queue_timeout must be .* at most 36525"),
    Bad(
        "execution_timeout_huge",
        tpu(execution_timeout=timedelta(days=10**6)),
        "execution_timeout must be a timedelta or seconds >= 0 and at most 36525 days",
    ),
    Bad(
        "min_slices_without_restarts",
        tpu(num_slices=2, min_slices=1, output_dir="/ckpt", max_restarts=0),
        "min_slices needs max_restarts >= 1",
    ),
    Bad(
        "shrink_after_past_timeout",
        tpu(
            num_slices=2,
            min_slices=1,
            output_dir="/ckpt",
            shrink_after=3600,
            execution_timeout=timedelta(minutes=30),
        ),
        "shrink_after .3600 s. must be shorter than execution_timeout",
    ),
    Bad(
        "require_distributed_pathways",
        tpu(require_distributed=True, pathways=True),
        "require_distributed does not go with pathways",
    ),
    Bad(
        "initialize_distributed_command",
        tpu(initialize_distributed=True),
        "initialize_distributed=True does nothing for a command",
    ),
    Bad(
        "elastic_multi_cube_super_slice",
        tpu(
            accelerator="tpu7x-4x4x8",
            dynamic_slicing=True,
            queue_name="q",
            num_slices=2,
            min_slices=1,
            output_dir="/ckpt",
        ),
        "min_slices does not go with a dynamic super-slice of several",
    ),
    Bad(
        "selector_replaces_accelerator",
        tpu(node_selector={"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"}),
        "node_selector sets 'cloud.google.com/gke-tpu-accelerator'",
    ),
    Bad(
        "override_slice_topology",
        tpu(
            pod_template_override={
                "metadata": {"annotations": {"cloud.google.com/gke-tpu-slice-topology": "4x4"}}
            }
        ),
        "pod_template_override sets 'cloud.google.com/gke-tpu-slice-topology'",
    ),
    Bad(
        "override_queue_label",
        tpu(pod_template_override={"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}}),
        "use queue_name=",
    ),
]


@pytest.mark.parametrize("bad", AT_PARSE, ids=lambda bad: bad.id)
def test_rejected_at_parse(bad: Bad, k8s: Emulator):
    with DAG("bad_input", schedule=None), pytest.raises((ValueError, TypeError), match=bad.message):
        bad.build()
    assert k8s.requests == []  # nothing reached the cluster


# task_id in dags/bad_inputs.py -> what its failure must say
ONCE_RENDERED = {
    "image_renders_invalid": "image 'Jax:Latest' is not a valid image reference",
    "env_renders_to_int": "env value for 'STEPS' must be a string, got int 30",
    "name_renders_invalid": "'Train_Run' must be a DNS-1035 label",
    "checkpoint_dir_renders_invalid": "checkpoint_dir 's3://b/ckpt': only GCS is supported",
    "label_renders_invalid": "labels['team'] value 'ML Team' is not a valid label value",
    "namespace_renders_invalid": "namespace must be a DNS-1123 label",
    "output_dir_renders_s3": "output_dir 's3://b/ckpt': only GCS is supported",
    "env_renders_to_list": "env must be a mapping (a dict), got list",
    "entrypoint_renders_invalid": "entrypoint must look like 'package.module:function'",
}
IN_THE_PODS = {
    "result_not_json": "not JSON-serializable",
    "result_nan": "NaN or infinity",
    "result_too_big": "too big for the 4096-byte termination message. Set output_dir",
    "image_not_found": "cannot start: Image cannot be pulled, unable to start: ImagePullBackOff",
}


@pytest.fixture(scope="module")
def bad_run(
    k8s_emulator: Emulator, airflow_home: AirflowHome, tmp_path_factory: pytest.TempPathFactory
) -> Run:
    k8s_emulator.reset()
    k8s_emulator.runner = ProcessRunner(pythonpath=[str(REPO)])
    k8s_emulator.unpullable(
        MISSING_IMAGE, f'failed to pull and unpack image "{MISSING_IMAGE}": not found'
    )
    run = run_dag(
        airflow_home,
        k8s_emulator,
        tmp_path_factory.mktemp("bad-inputs"),
        "bad_inputs",
        AIRFLOW__JAX__DEFAULT_BACKEND="kubernetes",
    )
    yield run
    k8s_emulator.reset()


@pytest.mark.slow  # the bad_inputs DAG under `airflow dags test`: a minute or more
@pytest.mark.parametrize("task_id", ONCE_RENDERED)
def test_rejected_once_rendered_before_any_cluster_call(bad_run: Run, task_id: str):
    assert bad_run.states[task_id] == ("failed", 1), bad_run.proc.stdout[-3000:]
    assert ONCE_RENDERED[task_id] in bad_run.proc.stdout
    assert bad_run.created_for(task_id) == 0


@pytest.mark.slow
@pytest.mark.parametrize("task_id", IN_THE_PODS)
def test_rejected_in_the_pods_and_the_jobset_deleted(bad_run: Run, task_id: str):
    assert bad_run.states[task_id][0] == "failed", bad_run.proc.stdout[-3000:]
    if task_id.startswith("result_"):  # its retries unused: the training would run again
        assert bad_run.states[task_id] == ("failed", 1), bad_run.states[task_id]
    assert IN_THE_PODS[task_id] in bad_run.proc.stdout
    if task_id == "image_not_found":  # kubelet's own words reach the task's error
        assert f'"{MISSING_IMAGE}": not found' in bad_run.proc.stdout
    assert bad_run.created_for(task_id) == 1


@pytest.mark.slow
def test_no_cluster_object_is_left(bad_run: Run, k8s_emulator: Emulator):
    # ...and no noise about the links a task that never made a JobSet has none of
    assert "XCom not found" not in bad_run.proc.stdout
    assert bad_run.left == []
    assert k8s_emulator.pods() == []


def test_the_table_has_at_least_20_rows():
    assert len(AT_PARSE) + len(ONCE_RENDERED) + len(IN_THE_PODS) >= 20


def test_a_parse_error_names_the_fix_in_the_dag_processor(tmp_path: Path):
    """What the UI shows as the DAG file's import error, from the DAG processor's parser."""
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "typo.py").write_text(
        "from airflow.sdk import DAG\n"
        "from airflow_provider_jax.operators import JaxTpuSliceOperator\n"
        "with DAG('typo', schedule=None):\n"
        "    JaxTpuSliceOperator(task_id='t', accelerator='tpu-v6e-17', image='i', command=['x'])\n"
    )
    bag = DagBag(dag_folder=str(tmp_path))
    (error,) = bag.import_errors.values()
    assert "Unknown TPU accelerator 'tpu-v6e-17'" in error
    assert "'tpu-v6e-16'" in error
