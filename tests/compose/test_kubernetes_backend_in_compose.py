"""The product's whole path: Airflow in containers (docker-compose.yaml's stack, on
LocalExecutor), the quickstart on the ``kubernetes`` backend, its JobSet's pods scheduled by
kube-scheduler onto the real cluster's nodes and run there from the runtime image they hold,
the task deferred to the stack's triggerer meanwhile, and the leader's result back as the
task's XCom.

The stack is set up as docs/docker-compose.md tells a user: its ``docker-compose.override.yaml``
as written there, beside the file, with ``KUBECONFIG`` (self-contained, as ``kubectl config
view --flatten`` writes it) and ``AIRFLOW__JAX__DEFAULT_IMAGE`` (what ``make cluster`` prints)
in the shell; the quickstart is triggered with that image as its ``image``. The containers reach the API server where the cluster serves it, on this
machine's end of the nodes' network (``harness/real_cluster/pod_network.py``): through their
bridge's gateway, this machine, with no route or NAT added.

The cluster is the session's ``real_cluster`` (this file runs in the cluster worker:
``tests/support/cluster_worker.py``); the images the stack starts from are the stand-ins of
``test_quickstart_in_compose.py``."""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from kubernetes import client, config

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.images import RUNTIME_IMAGE
from harness.real_cluster.nodes import NODES
from tests.support.compose_stack import ComposeStack, checkout
from tests.support.docker_engine import DockerEngine
from tests.support.jobset_schema import REPO

pytestmark = pytest.mark.timeout(1800)  # the first run builds the stand-ins (once a machine)

STEPS = 20
OVERRIDE = "docker-compose.override.yaml"


def documented_override() -> str:
    """The override docs/docker-compose.md gives, as written: its first YAML block under
    "A Kubernetes cluster"."""
    page = (REPO / "docs" / "docker-compose.md").read_text()
    section = page.split("\n## A Kubernetes cluster\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```yaml\n(.*?)^```", section, re.S | re.M)
    assert found, "docs/docker-compose.md shows no override under 'A Kubernetes cluster'"
    return found[1]


def flattened(kubeconfig: Path, into: Path) -> Path:
    """``kubeconfig`` with the files it names inlined (``kubectl config view --flatten``):
    inside a container, the cluster's CA file is not at the path the cluster wrote."""
    conf = yaml.safe_load(kubeconfig.read_text())
    for cluster in conf["clusters"]:
        ca = cluster["cluster"].pop("certificate-authority", None)
        if ca:
            data = base64.b64encode(Path(ca).read_bytes()).decode()
            cluster["cluster"]["certificate-authority-data"] = data
    into.write_text(yaml.safe_dump(conf))
    into.chmod(0o644)  # read by AIRFLOW_UID in the containers
    return into


@dataclass
class Ran:
    stack: ComposeStack
    run_id: str
    states: list[str]  # the train task's states, as the REST API showed them, in order
    run_s: float  # trigger to success


@pytest.fixture(scope="module")
def ran(
    real_cluster: ControlPlane,
    docker_engine: DockerEngine,
    compose_image: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Ran]:
    root = checkout(tmp_path_factory.mktemp("checkout"), "kubernetes")
    (root / OVERRIDE).write_text(documented_override())
    kubeconfig = flattened(real_cluster.kubeconfig(), root.parent / "kubeconfig")
    settings = {"KUBECONFIG": str(kubeconfig), "AIRFLOW__JAX__DEFAULT_IMAGE": RUNTIME_IMAGE}
    stack = ComposeStack(docker_engine, root, settings=settings)
    try:
        stack.up()
        stack.unpause("quickstart")
        started = time.monotonic()
        run_id = stack.trigger("quickstart", {"steps": STEPS, "image": RUNTIME_IMAGE})
        train = stack.task_path("quickstart", run_id, "train")
        states: list[str] = []

        def final() -> str | None:
            state = stack.api("GET", train)["state"]
            if not states or states[-1] != state:
                states.append(state)
            run = stack.api("GET", f"/api/v2/dags/quickstart/dagRuns/{quote(run_id, safe='')}")
            return run["state"] if run["state"] in ("success", "failed") else None

        state = stack.wait_until(lambda: f"the quickstart ({states})", final, timeout=900)
        run_s = time.monotonic() - started
        assert state == "success", f"{states}\n{stack.state()}"
        print(f"\nkubernetes: quickstart {run_s:.0f} s, train {states}")
        yield Ran(stack, run_id, states, run_s)
    finally:
        stack.down()


def test_the_leaders_result_comes_back_as_the_xcom(ran: Ran):
    result = ran.stack.xcom("quickstart", ran.run_id, "train")
    assert result["step"] == STEPS  # the conf reached the pods
    assert (result["processes"], result["devices"]) == (2, 8)  # 2 hosts x 4 chips
    log = ran.stack.task_log("quickstart", ran.run_id, "show")
    assert f"at step {STEPS} (2 processes, 8 devices)" in log, log


def test_the_task_deferred_to_the_triggerer(ran: Ran):
    """It held no executor slot while its JobSet ran: the triggerer waited for the leader."""
    assert "deferred" in ran.states, ran.states
    log = ran.stack.task_log("quickstart", ran.run_id, "train")
    assert "Pausing task as DEFERRED" in log, log
    ti = ran.stack.api("GET", ran.stack.task_path("quickstart", ran.run_id, "train"))
    assert (ti["state"], ti["try_number"]) == ("success", 1), ti


def test_a_dag_that_names_no_image_runs_the_one_make_cluster_printed(ran: Ran):
    """``AIRFLOW__JAX__DEFAULT_IMAGE`` from the user's shell reaches the containers that run
    tasks (the quickstart names its image; a DAG that names none runs this one)."""
    for service in ("airflow-scheduler", "airflow-triggerer"):
        env = ran.stack.compose("exec", "-T", service, "printenv", "AIRFLOW__JAX__DEFAULT_IMAGE")
        assert env.strip() == RUNTIME_IMAGE, service


def test_its_pods_ran_on_the_real_nodes_from_the_runtime_image(
    ran: Ran, real_cluster: ControlPlane
):
    """The JobSet the task rendered names the runtime image; kube-scheduler bound its two
    pods to v5e nodes of the cluster (its events outlive the JobSet, which the task deletes)."""
    ti = ran.stack.api("GET", ran.stack.task_path("quickstart", ran.run_id, "train"))
    jobset = yaml.safe_load(ti["rendered_fields"]["jobset_manifest"])
    name = jobset["metadata"]["name"]
    images = {
        container["image"]
        for job in jobset["spec"]["replicatedJobs"]
        for container in job["template"]["spec"]["template"]["spec"]["containers"]
    }
    assert RUNTIME_IMAGE in images, images
    core = client.CoreV1Api(config.new_client_from_config(str(real_cluster.kubeconfig())))
    events = core.list_namespaced_event("default", field_selector="reason=Scheduled").items
    bound = {
        e.involved_object.name: e.message.rsplit(" to ", 1)[1]
        for e in events
        if e.involved_object.name.startswith(f"{name}-")
    }
    v5e = {node.name for node in NODES if node.name.startswith("gke-tpu-v5e-")}
    assert len(bound) == 2 and set(bound.values()) <= v5e, bound
