from __future__ import annotations

import subprocess

import pytest

from airflow_provider_jax.backends.local.pods import plan_pods
from airflow_provider_jax.manifest.accelerators import parse_gpu, parse_tpu
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.capacity_choices import CapacityChoices
from airflow_provider_jax.manifest.failure_policy import CODE_ERROR_RULE
from airflow_provider_jax.manifest.jobset_api import EXCLUSIVE_TOPOLOGY_ANNOTATION
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.manifest.names import jobset_name, max_name_length
from airflow_provider_jax.manifest.pod_override import merge_override
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators.job_spec import airflow_labels
from tests.support.job_specs import _pod, _rjob, spec
from tests.support.tpu_table import TPU_TABLE


def all_accelerators():
    for row in TPU_TABLE:
        yield parse_tpu(row[0])
    yield parse_tpu("v6e-2x4", chips_per_host=4)
    yield parse_gpu("h100", gpus_per_node=8, num_nodes=1)
    yield parse_gpu("h100", gpus_per_node=8, num_nodes=4)


CASES = [
    (acc, slices)
    for acc in all_accelerators()
    # GPU jobs have one replica; GKE runs multislice on multi-host slices only
    for slices in ((1, 4) if acc.kind == "tpu" and acc.multi_host else (1,))
]


@pytest.mark.parametrize(
    ("accelerator", "num_slices"), CASES, ids=[f"{a.name}-{a.hosts}h-{s}s" for a, s in CASES]
)
def test_manifest_validates_and_has_the_right_shape(accelerator, num_slices, validate_jobset):
    manifest = build_jobset(spec(accelerator, num_slices))
    validate_jobset(manifest)

    assert manifest["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert manifest["spec"]["network"] == {
        "enableDNSHostnames": True,
        "subdomain": manifest["metadata"]["name"],
    }
    rjob = _rjob(manifest)
    job = rjob["template"]["spec"]
    assert rjob["replicas"] == num_slices
    assert job["parallelism"] == job["completions"] == accelerator.hosts
    assert (job["completionMode"], job["backoffLimit"]) == ("Indexed", 0)
    pod = _pod(manifest)
    assert pod["restartPolicy"] == "Never"
    for key, value in accelerator.node_selector.items():
        assert pod["nodeSelector"][key] == value
    (container,) = pod["containers"]
    resource = accelerator.resource_name
    assert container["resources"]["limits"][resource] == str(accelerator.chips_per_host)
    assert container["resources"]["requests"][resource] == str(accelerator.chips_per_host)
    assert any(t["key"] == resource for t in pod["tolerations"])
    exclusive = manifest["metadata"].get("annotations", {}).get(EXCLUSIVE_TOPOLOGY_ANNOTATION)
    multi_host_tpu = accelerator.kind == "tpu" and accelerator.hosts > 1
    assert exclusive == ("cloud.google.com/gke-nodepool" if multi_host_tpu else None)

    env_names = [e["name"] for e in container["env"]]
    megascale = {n for n in env_names if n.startswith("MEGASCALE_")}
    assert bool(megascale) == (num_slices > 1)


def _process_env(pod_plan) -> dict[str, str]:
    """Run the pod's real `sh` prelude, as the container would, and read back its env."""
    argv = [*pod_plan.argv[: pod_plan.argv.index("jax-launch") + 1], "env"]
    out = subprocess.run(argv, env=pod_plan.env, capture_output=True, text=True, check=True)
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


@pytest.mark.parametrize(
    ("accelerator", "num_slices"),
    [
        (parse_tpu("v6e-16"), 1),
        (parse_tpu("v6e-16"), 4),
        (parse_tpu("v5p-64"), 3),
        (parse_tpu("v6e-8"), 2),
        (parse_gpu("h100", gpus_per_node=8, num_nodes=4), 1),
    ],
)
def test_every_process_gets_a_unique_id_and_one_coordinator(accelerator, num_slices):
    manifest = build_jobset(spec(accelerator, num_slices))
    envs = [_process_env(p) for p in plan_pods(manifest)]
    n = accelerator.hosts * num_slices
    assert sorted(int(e["JAX_PROCESS_ID"]) for e in envs) == list(range(n))
    assert {e["JAX_NUM_PROCESSES"] for e in envs} == {str(n)}
    (coordinator,) = {e["JAX_COORDINATOR_ADDRESS"] for e in envs}
    name, rjob = manifest["metadata"]["name"], _rjob(manifest)["name"]
    assert coordinator == f"{name}-{rjob}-0-0.{name}:8490"
    for e in envs:  # what xpk- and MaxText-style scripts read
        assert (e["JAX_COORDINATOR_IP"], e["JAX_COORDINATOR_PORT"]) == (
            f"{name}-{rjob}-0-0.{name}",
            "8490",
        )
        assert (e["NNODES"], e["NODE_RANK"]) == (str(n), e["JAX_PROCESS_ID"])
    if num_slices > 1:
        assert sorted({e["MEGASCALE_SLICE_ID"] for e in envs}) == [
            str(i) for i in range(num_slices)
        ]
        assert {e["MEGASCALE_COORDINATOR_ADDRESS"] for e in envs} == {coordinator.split(":")[0]}
        assert {e["MEGASCALE_NUM_SLICES"] for e in envs} == {str(num_slices)}
        for e in envs:  # slice-major ids: each slice owns a contiguous block
            assert int(e["JAX_PROCESS_ID"]) // accelerator.hosts == int(e["MEGASCALE_SLICE_ID"])
    else:
        assert not any(k.startswith("MEGASCALE_") for e in envs for k in e)


def test_user_command_runs_unchanged_after_the_prelude():
    manifest = build_jobset(spec(parse_tpu("v6e-4")))
    (pod,) = plan_pods(manifest)
    out = subprocess.run(
        [*pod.argv[:-2], "sh", "-c", 'printf "%s|" "$0" "$JAX_PROCESS_ID"', "with space"],
        env=pod.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == "with space|0|"


def test_names_are_deterministic_and_fit():
    acc = parse_tpu("v6e-256")
    a = jobset_name("d", "A_Very.Long-Task__id" * 5, "run", 3, acc, 16)
    assert a == jobset_name("d", "A_Very.Long-Task__id" * 5, "run", 3, acc, 16)
    assert a != jobset_name("d", "A_Very.Long-Task__id" * 5, "run", 4, acc, 16)
    assert a != jobset_name("d", "A_Very.Long-Task__id" * 5, "run2", 3, acc, 16)
    assert len(a) <= max_name_length(acc, 16)
    longest_pod = f"{a}-slice-15-63-abcde"
    assert len(longest_pod) <= 63
    assert jobset_name("d", "123_task", "r", -1, acc, 1).startswith("task-")
    assert jobset_name("d", "___", "r", -1, acc, 1).startswith("jax-")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_slices": 0}, "num_slices must be a positive integer"),
        ({"num_slices": -2}, "num_slices must be a positive integer"),
        ({"image": ""}, "image must be a non-empty string"),
        ({"command": "python train.py"}, "command must be a non-empty list"),
        ({"command": ["python", 3]}, "every command argument must be a string"),
        ({"env": {"LR": 0.1}}, "env value for 'LR' must be a string, got float"),
        ({"env": {"BAD NAME": "1"}}, "not a valid environment variable name"),
        ({"env": {"JAX_PROCESS_ID": "3"}}, "which the provider sets"),
        ({"max_restarts": -1}, "max_restarts must be >= 0"),
        ({"name": "Train"}, "must be a DNS-1035 label"),
        ({"name": "1train"}, "must be a DNS-1035 label"),
        ({"name": "t" * 50}, "Use at most"),
    ],
)
def test_bad_specs(kwargs, message):
    base = {
        "name": "train",
        "accelerator": parse_tpu("v6e-16"),
        "image": "img",
        "command": ["python3"],
    } | kwargs
    with pytest.raises(ValueError, match=message):
        JaxJobSpec(**base)


def test_kueue_ttl_priority_and_overrides(validate_jobset):
    manifest = build_jobset(
        spec(
            parse_tpu("v6e-16"),
            queue_name="tpu-queue",
            ttl_seconds_after_finished=600,
            priority_class_name="high",
            max_restarts=3,
            termination_grace_period=25,
            service_account_name="trainer",
            node_selector={"pool": "a"},
            tolerations=[{"key": "spot", "operator": "Exists"}],
            volumes=[{"name": "data", "emptyDir": {}}],
            volume_mounts=[{"name": "data", "mountPath": "/data"}],
            resources={"requests": {"memory": "100Gi"}},
            pod_template_override={
                "spec": {
                    "containers": [{"name": "jax", "securityContext": {"privileged": True}}],
                    "hostNetwork": True,
                }
            },
        )
    )
    validate_jobset(manifest)
    assert manifest["spec"]["suspend"] is True
    assert manifest["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "tpu-queue"
    assert manifest["spec"]["ttlSecondsAfterFinished"] == 600
    assert manifest["spec"]["failurePolicy"] == {"maxRestarts": 3, "rules": [CODE_ERROR_RULE]}
    pod = _pod(manifest)
    assert pod["priorityClassName"] == "high"
    assert pod["terminationGracePeriodSeconds"] == 25
    assert pod["serviceAccountName"] == "trainer"
    assert pod["hostNetwork"] is True
    assert pod["nodeSelector"]["pool"] == "a"
    (container,) = pod["containers"]
    assert container["securityContext"] == {"privileged": True}
    assert container["image"] == "us-docker.pkg.dev/p/r/jax:1"  # merged, not replaced
    assert container["resources"]["requests"]["memory"] == "100Gi"


def test_merge_override_by_merge_key():
    base = {"volumes": [{"name": "x", "v": 1}, {"name": "y", "v": 2}], "b": [1, 2], "c": {"d": 1}}
    merged = merge_override(base, {"volumes": [{"name": "y", "v": 3}, {"name": "z"}], "b": [3]})
    assert merged == {
        "volumes": [{"name": "x", "v": 1}, {"name": "y", "v": 3}, {"name": "z"}],
        "b": [3],
        "c": {"d": 1},
    }
    assert base["volumes"][1]["v"] == 2
    mounts = merge_override(
        {"volumeMounts": [{"name": "a", "mountPath": "/a"}]},
        {"volumeMounts": [{"name": "a", "mountPath": "/b"}]},
    )
    assert mounts["volumeMounts"] == [  # by mountPath, as Kubernetes merges them
        {"name": "a", "mountPath": "/a"},
        {"name": "a", "mountPath": "/b"},
    ]


def test_override_tolerations_are_added_to_the_accelerators():
    job = spec(
        parse_tpu("tpu-v6e-16"),
        capacity=CapacityChoices.parse("spot"),
        pod_template_override={"spec": {"tolerations": [{"key": "team", "operator": "Exists"}]}},
    )
    pod = build_jobset(job)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    keys = [t.get("key") for t in pod["spec"]["tolerations"]]
    assert keys[0] == "google.com/tpu"
    assert "cloud.google.com/gke-spot" in keys and keys[-1] == "team"


def test_labels_are_label_safe():
    labels = airflow_labels("dag", "task", "manual__2026-01-01T00:00:00+00:00", 7, 2)
    assert labels["map_index"] == "7"
    assert labels["try_number"] == "2"
    assert ":" not in labels["run_id"] and "+" not in labels["run_id"]
    long = airflow_labels("d" * 200, "t", "r", -1, 1)
    assert len(long["dag_id"]) <= 63
    assert "map_index" not in long
