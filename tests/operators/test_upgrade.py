"""A task deferred by the previous release resumes after an upgrade: its trigger row (the
kwargs ``JobSetTrigger.serialize()`` wrote) still builds a trigger, and the event and
``execute_complete`` kwargs it stored, written out literally here as that release wrote them,
still give the leader's result."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.runtime.messages import success_message
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from harness.jobsets import manifest, succeed
from harness.k8s_emulator import PodRun, PodScript

# As 0.1.0 stored them (a Kubernetes connection cluster).
CLUSTER_0_1 = {
    "conn_id": "kubernetes_default",
    "cluster_context": None,
    "in_cluster": None,
    "cluster_url": None,
    "ssl_ca_cert": None,
    "gcp_conn_id": "google_cloud_default",
    "impersonation_chain": None,
    "use_dns_endpoint": False,
}


def test_a_task_deferred_by_0_1_resumes(k8s):
    def script(pod: PodRun) -> PodScript:
        leader = pod.slice_index == pod.host_index == 0
        return PodScript(message=success_message({"loss": 0.25}) if leader else "")

    k8s.script(script)
    op = JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        image="img:1",
        command=["true"],
        backend="kubernetes",
    )
    ti = SimpleNamespace(
        dag_id="dag", task_id="train", run_id="manual__1", map_index=-1, try_number=1,
        start_date=None, xcom_push=lambda key, value: None,
    )  # fmt: skip
    context = {"ti": ti}
    created = KubernetesCluster().hook().create_jobset(op.build_manifest(context))
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    k8s.wait_for(lambda: k8s.jobset(name)["status"].get("terminalState"), 20, "the job to end")

    trigger_row = {
        "name": name,
        "namespace": "default",
        "uid": uid,
        "cluster": CLUSTER_0_1,
        "deadline": None,
        "poll_interval": 10.0,
        "retry_budget": 600.0,
        "log_lines": 1000,
    }
    assert JobSetTrigger(**trigger_row).serialize()[1] == trigger_row

    event_0_1 = {
        "status": "success",
        "name": name,
        "namespace": "default",
        "uid": uid,
        "reason": "Completed",
        "message": f"JobSet default/{name} completed",
        "jobset": {"terminalState": "Completed", "restarts": 0, "maxRestarts": 0},
    }
    assert op.execute_complete(context, event=event_0_1, cluster=CLUSTER_0_1) == {"loss": 0.25}
    k8s.wait_for(lambda: k8s.jobset(name) is None, 10, "the JobSet to go")


async def test_a_row_of_0_1_with_every_option_set_resumes_with_them(k8s, capsys):
    """Each WatchOptions field away from its default, as 0.1 wrote the row: the trigger of
    this release holds them (``trigger.watch``) and writes the same row back."""
    k8s.script(succeed({"loss": 0.5}, steps=2))
    created = KubernetesCluster().hook().create_jobset(manifest())
    row = {
        "name": created["metadata"]["name"],
        "namespace": "default",
        "uid": created["metadata"]["uid"],
        "cluster": CLUSTER_0_1,
        "deadline": None,
        "poll_interval": 5.0,
        "retry_budget": 300.0,
        "log_lines": 50,
        "queue_timeout": 600.0,
        "queue_until": "admitted",
        "stream_logs": "all",
        "fire_not_before": 0.0,
    }
    trigger = JobSetTrigger(**row)
    assert trigger.serialize() == ("airflow_provider_jax.triggers.jobset.JobSetTrigger", row)
    (event,) = [e.payload async for e in trigger.run()]
    assert (event["status"], event["uid"]) == ("success", row["uid"])
    assert "[0/1]" in capsys.readouterr().out  # stream_logs="all" came through the row
