"""The local backend on this machine's GPUs: found through a fake ``nvidia-smi`` (or the
driver's ``/proc`` entries), handed out per process, or the CPU standing in."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from airflow_provider_jax.backends.local.devices import (
    TooFewGpus,
    place,
    visible_gpus,
)
from airflow_provider_jax.backends.local.pods import plan_pods
from airflow_provider_jax.backends.local.processes import CPU_DEVICES_ENV, process_env
from airflow_provider_jax.backends.local.runner import LocalJobSet
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.gpu_direct import NODE_ENV
from airflow_provider_jax.operators import JaxGpuJobOperator
from tests.support.jobset_schema import REPO
from tests.support.local_runs import LOG, manifest

H100 = "NVIDIA H100 80GB HBM3"


def fake_nvidia_smi(folder: Path, count: int, extra: str = "") -> dict[str, str]:
    """A PATH whose ``nvidia-smi -L`` lists ``count`` H100s, as the real one prints them."""
    lines = [
        f"GPU {i}: {H100} (UUID: GPU-{i:08d}-aaaa-bbbb-cccc-dddddddddddd)" for i in range(count)
    ]
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\ncat <<'END'\n" + "\n".join(lines) + extra + "\nEND\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}/usr/bin:/bin"}


def gpu_plans(gpus_per_node: int, num_nodes: int):
    op = JaxGpuJobOperator(
        task_id="train",
        name="job",
        image="ignored-locally",
        accelerator="h100",
        gpus_per_node=gpus_per_node,
        num_nodes=num_nodes,
        entrypoint="tests.support.programs:device_env",
        backend="local",
        initialize_distributed=False,
        stream_logs="all",
    )
    return op, plan_pods(build_jobset(op.build_spec(name="job")))


def test_nvidia_smi_lists_the_gpus_and_the_workers_own_visible_list_narrows_them(tmp_path):
    env = fake_nvidia_smi(tmp_path, 4, "\n  MIG 1g.10gb     Device  0: (UUID: MIG-0000)")
    assert [(g.index, g.model) for g in visible_gpus(env)] == [(str(i), H100) for i in range(4)]
    narrowed = {**env, "CUDA_VISIBLE_DEVICES": "2,GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"}
    assert [g.index for g in visible_gpus(narrowed)] == ["2", "0"]
    # CUDA stops at the first entry it cannot use; an empty list or -1 hides every GPU.
    assert [g.index for g in visible_gpus({**env, "CUDA_VISIBLE_DEVICES": "1,7,2"})] == ["1"]
    assert visible_gpus({**env, "CUDA_VISIBLE_DEVICES": "-1"}) == []
    assert visible_gpus({**env, "CUDA_VISIBLE_DEVICES": ""}) == []


def test_without_nvidia_smi_the_drivers_proc_entries_count(tmp_path):
    proc = tmp_path / "gpus"
    for bus in ("0000:1b:00.0", "0000:0a:00.0"):
        (proc / bus).mkdir(parents=True)
        (proc / bus / "information").write_text(f"Model: \t\t {H100}\nIRQ: 1\n")
    gpus = visible_gpus({"PATH": str(tmp_path / "empty")}, proc_gpus=str(proc))
    assert [(g.index, g.model) for g in gpus] == [("0", H100), ("1", H100)]  # bus order
    assert visible_gpus({"PATH": str(tmp_path / "empty")}, str(tmp_path / "none")) == []


@pytest.mark.parametrize(("gpus_per_node", "num_nodes"), [(1, 4), (2, 2), (4, 1), (4, 2), (8, 1)])
def test_each_process_gets_its_own_consecutive_gpus_in_host_order(
    tmp_path, gpus_per_node, num_nodes
):
    env = fake_nvidia_smi(tmp_path, 8)
    _, plans = gpu_plans(gpus_per_node, num_nodes)
    placement = place(plans, "auto", env)
    handed = [placement.of(p) for p in sorted(plans, key=lambda p: p.host_index)]
    assert handed == [
        tuple(str(h * gpus_per_node + i) for i in range(gpus_per_node)) for h in range(num_nodes)
    ]
    assert len(placement.lines) == num_nodes
    assert placement.lines[0].startswith(f"[0/0] runs on GPU {', '.join(handed[0])} ({H100})")


def test_a_gpu_process_env_is_cuda_on_its_gpus_and_keeps_the_users_nccl_choices():
    _, plans = gpu_plans(2, 2)
    base = {
        "PATH": "/usr/bin",
        "XLA_FLAGS": "--xla_dump_to=/tmp/x",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "LD_LIBRARY_PATH": "/opt/cuda/lib64",
    }
    pod = plans[1]
    env = process_env(pod, "/tmp/pod", base=base, gpus=("2", "3"))
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["JAX_PLATFORMS"] == "cuda"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x"
    assert CPU_DEVICES_ENV not in env  # no CPU devices forced
    assert env["NCCL_SOCKET_IFNAME"] == "lo"
    assert env["LD_LIBRARY_PATH"] == "/opt/cuda/lib64"  # not the GKE node's path
    mine = process_env(pod, "/tmp/pod", base={**base, "NCCL_SOCKET_IFNAME": "eth1"}, gpus=("2",))
    assert mine["NCCL_SOCKET_IFNAME"] == "eth1"
    cpu = process_env(pod, "/tmp/pod", base=base)
    assert cpu["JAX_PLATFORMS"] == "cpu"
    assert cpu[CPU_DEVICES_ENV] == "2"


def test_gke_node_paths_from_gpudirect_give_way_to_the_workers_own():
    _, plans = gpu_plans(8, 2)
    pod = plans[0]
    on_gke = {**pod.env, **NODE_ENV}
    env = process_env(
        type(pod)(**{**pod.__dict__, "env": on_gke}), "/tmp/pod", base={"PATH": "/usr/bin"}
    )
    assert not set(NODE_ENV) & set(env)


def test_too_many_gpus_is_refused_before_any_process_and_says_how_to_run_on_the_cpu(tmp_path):
    env = fake_nvidia_smi(tmp_path, 2)
    _, plans = gpu_plans(2, 2)
    with pytest.raises(TooFewGpus) as refused:
        place(plans, "auto", env)
    message = str(refused.value)
    assert "asks for 4 GPU(s)" in message and "shows 2 (0, 1)" in message
    assert "[jax] local_accelerators = cpu" in message
    assert "AIRFLOW__JAX__LOCAL_ACCELERATORS=cpu" in message


@pytest.mark.parametrize(
    ("setting", "gpus", "accelerator", "why"),
    [
        ("auto", 0, "h100", "no NVIDIA GPU is visible here"),
        ("cpu", 8, "h100", "[jax] local_accelerators = cpu"),
        ("auto", 8, "tpu-v5litepod-8", "TPU chips are emulated on the CPU locally"),
    ],
)
def test_the_cpu_stands_in_and_the_log_says_why_in_one_line(
    tmp_path, setting, gpus, accelerator, why
):
    env = fake_nvidia_smi(tmp_path, gpus)
    if accelerator.startswith("tpu"):
        plans = plan_pods(manifest("hello", accelerator=accelerator))
    else:
        plans = gpu_plans(4, 2)[1]
    placement = place(plans, setting, env)
    assert all(placement.of(p) == () for p in plans)
    (line,) = placement.lines
    assert f"run on the CPU ({why})" in line and "JAX_PLATFORMS=cpu" in line


def test_an_unknown_setting_names_the_option_and_its_values():
    with pytest.raises(
        ValueError, match=r"\[jax\] local_accelerators must be one of \('auto', 'cpu'\), got 'gpu'"
    ):
        place(gpu_plans(1, 1)[1], "gpu", {})


def test_a_run_hands_each_process_its_gpus(tmp_path, monkeypatch, caplog):
    """Through the backend's own runner, with the fake device list: what each process saw."""
    caplog.set_level(logging.INFO, logger=LOG.name)
    monkeypatch.setenv(
        "PATH", fake_nvidia_smi(tmp_path, 4)["PATH"] + os.pathsep + os.environ["PATH"]
    )
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    op, _ = gpu_plans(2, 2)
    manifest = build_jobset(op.build_spec(name="job"))
    jobset = LocalJobSet(manifest, log=LOG, pythonpath=[str(REPO)], watch=op.plan.watch)
    jobset.run()
    seen = {
        int(m.split()[2]): json.loads(m.split(" ", 3)[3])
        for m in caplog.messages
        if m.split(" ", 2)[1:2] == ["devices"]
    }
    assert seen == {
        h: {
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "CUDA_VISIBLE_DEVICES": f"{2 * h},{2 * h + 1}",
            "JAX_PLATFORMS": "cuda",
            "NCCL_SOCKET_IFNAME": "lo",
        }
        for h in (0, 1)
    }
    assert (
        f"[0/1] runs on GPU 2, 3 ({H100}) (CUDA_VISIBLE_DEVICES, JAX_PLATFORMS=cuda)."
        in caplog.messages
    )


def test_a_run_that_asks_for_too_many_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "PATH", fake_nvidia_smi(tmp_path, 1)["PATH"] + os.pathsep + os.environ["PATH"]
    )
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    op, _ = gpu_plans(1, 2)
    with pytest.raises(TooFewGpus, match="shows 1"):
        LocalJobSet(build_jobset(op.build_spec(name="job")), log=LOG, pythonpath=[str(REPO)])
