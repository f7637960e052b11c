"""A real Kubernetes cluster on this machine: etcd, kube-apiserver (RBAC and the Node
authorizer, static tokens), kube-controller-manager (its default controllers), kube-scheduler,
the JobSet controller and Kueue with their webhooks, and real nodes (kubelets with their own
containerd each, kube-proxy, CoreDNS: ``cluster_nodes.py``) that run pods in containers from
images the project builds.

Built from the pinned Go modules by ``tools/control-plane/build.sh`` (versions in
``tools/control-plane/versions.env``) and Debian's packages; nothing is downloaded but Go
modules, Debian packages and the lock's wheels. ``make cluster`` starts one in
``.cache/control-plane/run``; the ``real_cluster`` fixture starts its own.

The API server listens on this machine's end of the pods' network (``pod_network.py``), so the
nodes and the pods (through the ``kubernetes`` Service) reach it; the controllers and webhooks
stay on loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from harness.real_cluster import cgroups, manifests
from harness.real_cluster.api import Api
from harness.real_cluster.build import CACHE, REPO, binaries, build, versions
from harness.real_cluster.cluster_nodes import ClusterNodes, node_ready
from harness.real_cluster.cluster_services import kube_scheduler
from harness.real_cluster.components import (
    Component,
    ControlPlaneError,
    free_port,
    http_ok,
    https_ok,
    port_in_use,
    stop_all,
    stop_group,
)
from harness.real_cluster.identities import make_identities
from harness.real_cluster.images import AGENT, CODE_DIRS
from harness.real_cluster.node import clean_node_folder
from harness.real_cluster.nodes import CUBE_NODES, NODES, Node
from harness.real_cluster.pod_network import SERVICE_CIDR
from harness.reaper import start_time

# `make cluster`'s state; CLUSTER_DIR_ENV names another (the docs' test runs the documented
# blocks in its own folder, so a developer's `make cluster` is left alone).
CLUSTER_DIR_ENV = "AIRFLOW_JAX_CLUSTER_DIR"
DEFAULT_RUN_DIR = CACHE / "run"
RUN_DIR = Path(os.environ.get(CLUSTER_DIR_ENV) or DEFAULT_RUN_DIR).resolve()
# In every control plane's folder: `up` empties a folder only if it holds one (or nothing).
OURS = ".airflow-provider-jax-control-plane"
# Kueue's integrations: JobSets, and the Jobs they own (on by default in a real install).
KUEUE_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")
APISERVER_GATES = ("ContainerRestartRules", "RestartAllContainersOnContainerExits")
# Besides the defaults: the kubelets' limits (as every cluster), and GKE's tolerations for a pod
# that asks for an accelerator (GKE taints its TPU and GPU nodes; nodes.py).
ADMISSION_PLUGINS = ("NodeRestriction", "ExtendedResourceToleration")


class ControlPlane:
    """One control plane whose state (certificates, data, logs, kubeconfigs) is ``directory``."""

    def __init__(self, directory: Path = RUN_DIR, nodes: tuple[Node, ...] = NODES) -> None:
        self.directory = directory
        self.components: list[Component] = []
        self.ports: dict[str, int] = {}
        self.cluster = ClusterNodes(directory, nodes)

    # -- where things are ---------------------------------------------------------------------

    @property
    def host_ip(self) -> str:
        """Where the API server listens: this machine's end of the pods' network."""
        return self.cluster.network.host_ip

    @property
    def url(self) -> str:
        return f"https://{self.host_ip}:{self.ports['apiserver']}"

    @property
    def ca(self) -> Path:
        return self.directory / "pki" / "ca.crt"

    def kubeconfig(self, identity: str = "admin") -> Path:
        return self.directory / f"{identity}.kubeconfig"

    def api(self, identity: str = "admin") -> Api:
        return Api(self.url, identity, self.ca)

    # -- up and down --------------------------------------------------------------------------

    def up(self) -> ControlPlane:
        started = time.monotonic()
        paths = build()
        if self.directory.exists() and not self.directory.is_dir():
            raise ControlPlaneError(f"{self.directory} is a file: {CLUSTER_DIR_ENV} names a folder")
        if self.directory.exists():
            foreign = not (self.directory / OURS).exists() and any(self.directory.iterdir())
            if foreign and self.directory != DEFAULT_RUN_DIR.resolve():
                raise ControlPlaneError(
                    f"{self.directory} is not empty and holds no control plane's state: a "
                    f"cluster keeps its state in a folder of its own ({CLUSTER_DIR_ENV} names "
                    "a new or empty one), which it empties when it starts again"
                )
            shutil.rmtree(self.directory)
        (self.directory / "logs").mkdir(parents=True)
        (self.directory / OURS).touch()
        v = versions()
        try:
            self.cluster.network_up()
            self._pki()
            self._start_etcd(paths["etcd"])
            self._start_apiserver(paths["kube-apiserver"])
            api = self.api()
            jobset_dir = manifests.module_dir("sigs.k8s.io/jobset", v["JOBSET_VERSION"])
            kueue_dir = manifests.module_dir("sigs.k8s.io/kueue", v["KUEUE_VERSION"])
            self._install_crds(api, jobset_dir, kueue_dir)
            self._start_controller_manager(paths["kube-controller-manager"])
            self._start_jobset(paths["jobset"])
            self._start_kueue(paths["kueue"], kueue_dir)
            self._register_webhooks(api, jobset_dir, kueue_dir)
            self._run(kube_scheduler(paths["kube-scheduler"], self.kubeconfig("scheduler"),
                                     self._log("kube-scheduler")))  # fmt: skip
            self.control_plane_in = time.monotonic() - started
            self.cluster.up(api, paths, self.kubeconfig, self._kubelet_tls, self.ca)
        except BaseException:
            self.down()
            raise
        self._write_state()
        self.started_in = time.monotonic() - started
        return self

    def down(self) -> None:
        self.cluster.down()
        stop_all(list(reversed(self.components)))  # together: each takes a moment to end
        self.components.clear()
        (self.directory / "state.json").unlink(missing_ok=True)

    def _write_state(self) -> None:
        every = [*self.components, *self.cluster.components]
        state = {
            "ports": self.ports,
            # with each start time: a pid reused after a crash or a reboot is never signalled
            "pids": {c.name: [c.pid, start_time(c.pid) if c.pid else None] for c in every},
            "cgroup": self.cluster.cgroup,
            "link": self.cluster.network.link,
        }
        (self.directory / "state.json").write_text(json.dumps(state))

    def _run(self, component: Component, timeout: float = 60.0) -> None:
        self.components.append(component)
        component.start(timeout)

    def _log(self, name: str) -> Path:
        return self.directory / "logs" / f"{name}.log"

    # -- the parts, in order ------------------------------------------------------------------

    def _pki(self) -> None:
        self.ports["apiserver"] = free_port()
        self.authority, self.certs, self.tokens = make_identities(
            self.directory, self.url, self.kubeconfig, self.host_ip,
            nodes=[n.name for n in self.cluster.specs],
        )  # fmt: skip
        self.apiserver_cert = self.certs["apiserver"]
        self.kubelet_client = self.certs["apiserver-kubelet-client"]
        self.front_proxy = self.certs["front-proxy-client"]
        self.sa = self.certs["sa"]

    def _kubelet_tls(self, node: str, ip: str) -> tuple[Path, Path]:
        """A node's kubelet serving certificate, for its address (the API server checks it)."""
        pair = self.authority.issue(f"kubelet-{node}", common_name=f"system:node:{node}",
                                    dns=(node,), ips=(ip,))  # fmt: skip
        return pair.cert, pair.key

    def _start_etcd(self, etcd: Path) -> None:
        client, peer = free_port(), free_port()
        self.ports["etcd"] = client
        data = self.directory / "etcd"
        self._run(
            Component(
                "etcd",
                [
                    str(etcd),
                    "--name=default",
                    f"--data-dir={data}",
                    f"--listen-client-urls=http://127.0.0.1:{client}",
                    f"--advertise-client-urls=http://127.0.0.1:{client}",
                    f"--listen-peer-urls=http://127.0.0.1:{peer}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                    f"--initial-cluster=default=http://127.0.0.1:{peer}",
                    "--unsafe-no-fsync",
                    "--log-level=warn",
                ],
                self._log("etcd"),
                lambda: http_ok(f"http://127.0.0.1:{client}/health"),
                ports=(client, peer),
            )
        )

    def apiserver_argv(self, apiserver: Path) -> list[str]:
        pki = self.directory / "pki"
        return [
            str(apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            f"--bind-address={self.host_ip}", f"--secure-port={self.ports['apiserver']}",
            f"--advertise-address={self.host_ip}",
            f"--tls-cert-file={self.apiserver_cert.cert}",
            f"--tls-private-key-file={self.apiserver_cert.key}",
            f"--client-ca-file={self.ca}",
            f"--token-auth-file={pki / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self.sa.cert}",
            f"--service-account-signing-key-file={self.sa.key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--kubelet-client-certificate={self.kubelet_client.cert}",
            f"--kubelet-client-key={self.kubelet_client.key}",
            f"--kubelet-certificate-authority={self.ca}",
            "--kubelet-preferred-address-types=InternalIP",
            # The aggregator (Kueue's visibility API) authenticates as the front proxy.
            f"--requestheader-client-ca-file={self.ca}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.front_proxy.cert}",
            f"--proxy-client-key-file={self.front_proxy.key}",
            # restartPolicyRules and their RestartAllContainers action (JobSet's in-place
            # restarts): beta and on by default in 1.36, named so a reader need not know.
            f"--feature-gates={','.join(f'{g}=true' for g in APISERVER_GATES)}",
            "--allow-privileged=true", "--profiling=false",
        ]  # fmt: skip

    def _start_apiserver(self, apiserver: Path, timeout: float = 90.0) -> None:
        port = self.ports["apiserver"]
        self._run(
            Component(
                "kube-apiserver",
                self.apiserver_argv(apiserver),
                self._log("kube-apiserver"),
                lambda: https_ok(f"{self.url}/readyz", self.tokens["admin"], self.ca),
                ports=(port,),
            ),
            timeout,
        )

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (etcd keeps the state; every client loses its watches)."""
        old = next(c for c in self.components if c.name == "kube-apiserver")
        old.stop()
        self.components.remove(old)

    def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port, with a new (empty) watch cache."""
        self._start_apiserver(binaries()["kube-apiserver"])

    def _install_crds(self, api: Api, jobset_dir: Path, kueue_dir: Path) -> None:
        self.ports["kueue-webhook"] = free_port()
        objects = manifests.crds(jobset_dir, webhook_port=0, ca=self.ca)
        objects += manifests.crds(kueue_dir, webhook_port=self.ports["kueue-webhook"], ca=self.ca)
        objects.append({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": "kueue-system"}})  # fmt: skip
        for obj in objects:
            api.apply(obj)
        for crd in objects[:-1]:
            api.wait_established(crd["metadata"]["name"])

    def _start_controller_manager(self, kcm: Path) -> None:
        port = free_port()
        self._run(
            Component(
                "kube-controller-manager",
                [
                    str(kcm),
                    f"--kubeconfig={self.kubeconfig('controllers')}",
                    f"--authentication-kubeconfig={self.kubeconfig('controllers')}",
                    f"--authorization-kubeconfig={self.kubeconfig('controllers')}",
                    # Its default controllers, as a cluster runs them: the root CA's ConfigMap
                    # in every namespace (the pods' kube-api-access volume), node lifecycle
                    # (it lifts a new node's not-ready taint), PodGC (pods of a deleted node),
                    # EndpointSlices (a JobSet's headless Service's DNS names).
                    "--controllers=*",
                    f"--service-account-private-key-file={self.sa.key}",
                    f"--root-ca-file={self.ca}",
                    "--use-service-account-credentials=false",
                    "--leader-elect=false",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={port}",
                ],
                self._log("kube-controller-manager"),
                lambda: https_ok(f"https://127.0.0.1:{port}/healthz"),
                ports=(port,),
            )
        )

    def _controller_config(self, name: str, api_version: str, extra: dict[str, Any]) -> Path:
        webhook, probe = self.ports[f"{name}-webhook"], free_port()
        self.ports[f"{name}-probe"] = probe
        config = {
            "apiVersion": api_version,
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {
                "port": webhook,
                "host": "127.0.0.1",
                "certDir": str(self.authority.server_dir(f"{name}-webhook")),
            },
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"},
            **extra,
        }
        path = self.directory / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(config))
        return path

    def _start_jobset(self, jobset: Path) -> None:
        self.ports["jobset-webhook"] = free_port()
        # InPlaceRestart is alpha (off by default) in JobSet v0.12.
        config = self._controller_config(
            "jobset", "config.jobset.x-k8s.io/v1alpha1", {"featureGates": {"InPlaceRestart": True}}
        )
        probe, webhook = self.ports["jobset-probe"], self.ports["jobset-webhook"]
        self._run(
            Component(
                "jobset-controller",
                [
                    str(jobset),
                    f"--config={config}",
                    f"--kubeconfig={self.kubeconfig('controllers')}",
                ],
                self._log("jobset-controller"),
                lambda: http_ok(f"http://127.0.0.1:{probe}/readyz") and port_in_use(webhook),
                ports=(webhook, probe),
            )
        )

    def _start_kueue(self, kueue: Path, kueue_dir: Path) -> None:
        service = manifests.visibility_service(kueue_dir)
        visibility = self.authority.server_dir(
            "kueue-visibility", dns=manifests.service_dns_names(service)
        )
        # Kueue reads <cwd>/<KUEUE_VISIBILITY_CERT_DIR>/tls.{crt,key} (build.sh).
        work = self.directory / "kueue"
        work.mkdir()
        (work / versions()["KUEUE_VISIBILITY_CERT_DIR"]).symlink_to(visibility)
        self.ports["kueue-visibility"] = free_port()
        config = self._controller_config(
            "kueue",
            "config.kueue.x-k8s.io/v1beta2",
            {
                "namespace": "kueue-system",
                "manageJobsWithoutQueueName": False,
                "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
                # A setting since Kueue 0.19 (its --visibility-server-port flag is gone).
                "visibilityServer": {
                    "bindAddress": "127.0.0.1",
                    "bindPort": self.ports["kueue-visibility"],
                },
            },
        )
        probe = self.ports["kueue-probe"]
        # Kueue also reads /etc/kueue/metrics/certs/tls.{crt,key} (cmd/kueue/main.go, a local
        # constant), even with metrics off: it runs in a private mount namespace whose /etc is
        # an overlay of the machine's with that folder added. The machine's /etc is untouched.
        metrics = self.authority.server_dir("kueue-metrics")
        upper, scratch = work / "etc-upper", work / "etc-work"
        (upper / "kueue" / "metrics").mkdir(parents=True)
        scratch.mkdir()
        (upper / "kueue" / "metrics" / "certs").symlink_to(metrics)
        overlay = 'mount -t overlay overlay -o lowerdir=/etc,upperdir="$0",workdir="$1" /etc'
        self._run(
            Component(
                "kueue",
                [
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "--",
                    "sh",
                    "-c",
                    f'{overlay} && shift && exec "$@"',
                    str(upper),
                    str(scratch),
                    str(kueue),
                    f"--config={config}",
                    f"--kubeconfig={self.kubeconfig('controllers')}",
                ],
                self._log("kueue"),
                lambda: http_ok(f"http://127.0.0.1:{probe}/readyz"),
                ports=(self.ports["kueue-webhook"], probe, self.ports["kueue-visibility"]),
                cwd=work,
            ),
            timeout=90,
        )

    def _register_webhooks(self, api: Api, jobset_dir: Path, kueue_dir: Path) -> None:
        """After the servers are up: registered earlier, every create would wait on them."""
        objects = manifests.webhook_configurations(
            jobset_dir, prefix="jobset", port=self.ports["jobset-webhook"], ca=self.ca
        )
        objects += manifests.webhook_configurations(
            kueue_dir,
            prefix="kueue",
            port=self.ports["kueue-webhook"],
            ca=self.ca,
            served=("kueue-x-k8s-io", "jobset-x-k8s-io", "batch-v1-job"),
        )
        objects.append(manifests.visibility_service(kueue_dir))
        objects += manifests.visibility_apiservices(
            kueue_dir, port=self.ports["kueue-visibility"], ca=self.ca
        )
        for obj in objects:
            api.apply(obj)
        api.wait_apiservices_available()

    # -- the stand-in kubelet ---------------------------------------------------------------

    def start_stand_in_kubelet(self) -> Component:
        """The STAND-IN kubelet of the tpu7x cube's 16 nodes (``kubelet.py``), which this
        machine cannot hold as real ones; its pods run as processes. Until
        :meth:`stop_stand_in_kubelet`."""
        port = free_port()
        api = self.api()
        component = Component(
            "stand-in kubelet",
            [
                sys.executable, "-m", "harness.real_cluster.kubelet",
                f"--kubeconfig={self.kubeconfig('admin')}", f"--port={port}",
                f"--cert-dir={self.authority.server_dir('stand-in-kubelet')}",
                f"--work-dir={self.directory / 'stand-in-pods'}",
                # What the runtime image holds: the training code, and the agent's binary.
                *(f"--pythonpath={REPO / d}" for d in CODE_DIRS),
                f"--entrypoint={AGENT}={binaries()['in-place-restart-agent']}",
            ],
            self._log("stand-in-kubelet"),
            lambda: all(node_ready(api, n) for n in CUBE_NODES),
            ports=(port,),
            env={"PYTHONPATH": str(REPO)},
        )  # fmt: skip
        return component.start(90)

    def stop_stand_in_kubelet(self, component: Component) -> None:
        """Stop it, and delete its Nodes (its pods' processes stop with it)."""
        component.stop()
        for node in CUBE_NODES:
            self.api().delete(f"/api/v1/nodes/{node.name}")


def stop_recorded(directory: Path = RUN_DIR) -> list[str]:
    """Stop the components a ``state.json`` records (``make cluster-down``)."""
    state_file = directory / "state.json"
    if not state_file.exists():
        return []
    state = json.loads(state_file.read_text())
    stopped = []
    for name, recorded in reversed(list(state["pids"].items())):
        pid, started = recorded if isinstance(recorded, list) else (recorded, None)
        if pid and started is not None and start_time(pid) == started:  # still that process
            stop_group(pid)
            stopped.append(name)
    if state.get("cgroup"):
        cgroups.remove(state["cgroup"])
    for node in (directory / "nodes").glob("*") if (directory / "nodes").exists() else ():
        clean_node_folder(node)
    if state.get("link"):  # gone with its namespace; in case a process still held that
        subprocess.run(["ip", "link", "del", state["link"]], capture_output=True)
    state_file.unlink()
    return stopped
