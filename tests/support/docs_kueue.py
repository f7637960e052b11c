"""The Kueue objects a docs page gives a platform team, applied to a real cluster as written
and removed after: what the dynamic slicing and placement tests share."""

from __future__ import annotations

import re
from typing import Any

import yaml
from kubernetes import client

from tests.support.docs_pages import REPO

PLURALS = {
    "Topology": "topologies",
    "ResourceFlavor": "resourceflavors",
    "AdmissionCheck": "admissionchecks",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
}


def page_objects(page: str, section: str | None = None) -> list[dict[str, Any]]:
    """The objects of ``docs/<page>``'s yaml blocks (of its ``## <section>`` only, if given),
    in the page's order."""
    text = (REPO / "docs" / page).read_text()
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    return [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]


def apply(api: client.CustomObjectsApi, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        group, version = obj["apiVersion"].split("/")
        plural = PLURALS[obj["kind"]]
        if namespace := obj["metadata"].get("namespace"):
            api.create_namespaced_custom_object(group, version, namespace, plural, obj)
        else:
            api.create_cluster_custom_object(group, version, plural, obj)


def delete(api: client.CustomObjectsApi, objects: list[dict[str, Any]]) -> None:
    """``objects`` removed, the last made first (a queue before its flavor)."""
    for obj in reversed(objects):
        group, version = obj["apiVersion"].split("/")
        name, plural = obj["metadata"]["name"], PLURALS[obj["kind"]]
        if namespace := obj["metadata"].get("namespace"):
            api.delete_namespaced_custom_object(group, version, namespace, plural, name)
        else:
            api.delete_cluster_custom_object(group, version, plural, name)
