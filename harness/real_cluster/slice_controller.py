"""A STAND-IN for GKE's slice controller, the admission check of Ironwood dynamic slicing
(controllerName ``accelerator.gke.io/slice``). GKE's controller is not published as a Go
module, so the harness cannot build it; this does what its sources and tests show
(``tpu-slice-controller``: ``internal/controller``, ``internal/topology``, the sub-slicing
e2e tests), and nothing more:

- for a Workload whose quota Kueue reserved (with a topology assignment) and whose check of
  ours is Pending, one ``accelerator.gke.io/v1beta1`` ``Slice`` per pod set and replica, in
  the Workload's namespace and owned by it (garbage collected with it), naming the
  partitions Kueue assigned to that replica;
- the Slice marked ready (GKE's part: it forms the slice);
- then the check ``Ready``, so Kueue admits the Workload.

It sets no pod-set update. Its CRD is the stand-in's too: the fields the GKE reference
documents (``spec.type``, ``spec.topology``, ``spec.partitionIds``, a ``Ready`` condition).
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

log = logging.getLogger(__name__)

CONTROLLER = "accelerator.gke.io/slice"
GROUP, VERSION, PLURAL = "accelerator.gke.io", "v1beta1", "slices"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TOPOLOGY_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"
HOSTNAME = "kubernetes.io/hostname"
SUB_SLICES = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
CUBE = "4x4x4"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Slice", "plural": PLURAL, "singular": "slice", "listKind": "SliceList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["type", "topology", "partitionIds"],
                                "properties": {
                                    "type": {"type": "string", "enum": ["tpu7x"]},
                                    "topology": {"type": "string"},
                                    "partitionIds": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def assigned_nodes(assignment: Mapping[str, Any]) -> list[str]:
    """The node of every domain of a Kueue v1beta2 ``TopologyAssignment``, in order (its
    compact form: per slice, each level's values universal, or prefix + root + suffix)."""
    levels = assignment["levels"]
    host = levels.index(HOSTNAME)
    nodes = []
    for part in assignment.get("slices") or []:
        values = part["valuesPerLevel"][host]
        count = part["domainCount"]
        if "universal" in values:
            nodes += [values["universal"]] * count
            continue
        one = values["individual"]
        nodes += [f"{one.get('prefix', '')}{root}{one.get('suffix', '')}" for root in one["roots"]]
    return nodes


def partition_label(topology: str) -> str:
    shape = topology if topology in SUB_SLICES else CUBE
    return f"cloud.google.com/gke-tpu-partition-{shape}-id"


def partitions_per_replica(topology: str) -> int:
    if topology in SUB_SLICES:
        return 1
    return max(1, _chips(topology) // _chips(CUBE))


def _chips(topology: str) -> int:
    total = 1
    for side in topology.split("x"):
        total *= int(side)
    return total


class SliceController:
    """Run in a thread beside the tests that need it; ``stop()`` ends the watch."""

    def __init__(self, kubeconfig: Path) -> None:
        api = config.new_client_from_config(str(kubeconfig))
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.extensions = client.ApiextensionsV1Api(api)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slice-controller", daemon=True)
        self.errors: list[str] = []

    def install(self) -> None:
        try:
            self.extensions.create_custom_resource_definition(CRD)
        except client.ApiException as err:
            if err.status != 409:
                raise
        # Served once the CRD is Established.
        for event in watch.Watch().stream(
            self.extensions.list_custom_resource_definition,
            field_selector=f"metadata.name={PLURAL}.{GROUP}",
            timeout_seconds=60,
        ):
            conditions = event["object"].status.conditions or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break

    def start(self) -> SliceController:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    # -- the loop ------------------------------------------------------------------------------
    def _ours(self) -> set[str]:
        """Our AdmissionChecks, each marked Active (a check's controller sets that; Kueue
        holds a ClusterQueue inactive until every check it names is)."""
        checks = self.custom.list_cluster_custom_object(*KUEUE, "admissionchecks")["items"]
        ours = [c for c in checks if c["spec"]["controllerName"] == CONTROLLER]
        for check in ours:
            conditions = (check.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Active" and c["status"] == "True" for c in conditions):
                active = {"type": "Active", "status": "True", "reason": "Active",
                          "message": "the slice controller (stand-in) is ready",
                          "lastTransitionTime": _now()}  # fmt: skip
                self.custom.patch_cluster_custom_object_status(
                    *KUEUE, "admissionchecks", check["metadata"]["name"],
                    {"status": {"conditions": [active]}},
                )  # fmt: skip
        return {c["metadata"]["name"] for c in ours}

    def _workloads(self) -> Iterator[dict[str, Any]]:
        while not self._stop.is_set():
            listed = self.custom.list_cluster_custom_object(*KUEUE, "workloads")
            yield from listed["items"]
            stream = watch.Watch().stream(
                self.custom.list_cluster_custom_object,
                *KUEUE,
                "workloads",
                resource_version=listed["metadata"]["resourceVersion"],
                timeout_seconds=2,  # so stop() is seen; a relist follows each window
            )
            for event in stream:
                if event["type"] in ("ADDED", "MODIFIED"):
                    yield event["object"]

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for workload in self._workloads():
                    self.reconcile(workload)
            except Exception as err:  # a test reads errors; the loop goes on
                log.exception("slice controller stand-in")
                self.errors.append(repr(err))
                self._stop.wait(0.5)

    def reconcile(self, workload: dict[str, Any]) -> None:
        status = workload.get("status") or {}
        admission = status.get("admission")
        ours = self._ours()
        pending = [
            c for c in status.get("admissionChecks") or []
            if c["name"] in ours and c.get("state") == "Pending"
        ]  # fmt: skip
        if not admission or not pending:
            return
        meta = workload["metadata"]
        podsets = {p["name"]: p for p in workload["spec"]["podSets"]}
        for assignment in admission["podSetAssignments"]:
            podset = podsets[assignment["name"]]
            annotations = podset["template"].get("metadata", {}).get("annotations") or {}
            topology = annotations.get(TOPOLOGY_ANNOTATION)
            if topology is None or "topologyAssignment" not in assignment:
                continue
            label = partition_label(topology)
            ids: list[str] = []
            for node in assigned_nodes(assignment["topologyAssignment"]):
                value = self.core.read_node(node).metadata.labels[label]
                if value not in ids:
                    ids.append(value)
            each = partitions_per_replica(topology)
            for replica in range(len(ids) // each):
                self._slice(meta, podset["name"], replica, topology, ids[replica * each :][:each])
        checks = [
            {**c, "state": "Ready", "message": "Slices are ready (stand-in)",
             "lastTransitionTime": _now()} if c in pending else c
            for c in status["admissionChecks"]
        ]  # fmt: skip
        try:
            self.custom.patch_namespaced_custom_object_status(
                *KUEUE, meta["namespace"], "workloads", meta["name"],
                {"status": {"admissionChecks": checks}},
            )  # fmt: skip
        except client.ApiException as err:
            # A watch event can outlive its object: a Workload deleted (its JobSet gone)
            # after the event was sent is gone, not an error (controller-runtime's
            # reconcilers ignore NotFound); its Slices go with it (owner references).
            if err.status != 404:
                raise
            log.info("workload %s gone", meta["name"])

    def _slice(
        self, owner: Mapping[str, Any], podset: str, replica: int, topology: str, ids: list[str]
    ) -> None:
        name = f"{owner['name']}-{podset}-{replica}"
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Slice",
            "metadata": {
                "name": name,
                "namespace": owner["namespace"],
                "ownerReferences": [
                    {
                        "apiVersion": "/".join(KUEUE),
                        "kind": "Workload",
                        "name": owner["name"],
                        "uid": owner["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"type": "tpu7x", "topology": topology, "partitionIds": ids},
        }
        try:
            self.custom.create_namespaced_custom_object(
                GROUP, VERSION, owner["namespace"], PLURAL, body
            )
        except client.ApiException as err:
            if err.status != 409:
                raise
        ready = {"type": "Ready", "status": "True", "reason": "ACTIVE", "message": "",
                 "lastTransitionTime": _now()}  # fmt: skip
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, owner["namespace"], PLURAL, name, {"status": {"conditions": [ready]}}
        )
