"""Pathways: a TPU job as one logical machine (single controller). Pure: no I/O.

The user's function runs once, in a CPU pod (``pathways-head``) beside the Pathways resource
manager and IFRT proxy; every TPU host runs a Pathways worker; JAX in the head sees every chip
of every slice through the proxy. The facts here (replicated jobs, ports, flags, images, TPU
version names) are xpk 1.16's: ``templates/pathways_workload_create.yaml.j2`` and
``commands/workload.py::_generate_pathways_workload_yaml``; ``docs/pathways.md`` cites them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.manifest.accelerators.model import TPU_ACCELERATOR_LABEL
from airflow_provider_jax.manifest.jobset_api import NODEPOOL_LABEL
from airflow_provider_jax.runtime.stores import named_store, parse_location

HEAD = "pathways-head"
WORKER = "worker"
PROXY_CONTAINER, RM_CONTAINER, WORKER_CONTAINER = "pathways-proxy", "pathways-rm", "pathways-worker"
PROXY_PORT, RM_PORT, RM_SECOND_PORT = 29000, 29001, 29002
WORKER_PORTS = (29005, 29006, 8471, 8080)
HEAD_ENV = "PATHWAYS_HEAD"  # the coordinator pod's address, from JobSet's coordinator label
BACKEND_TARGET = f"grpc://$({HEAD_ENV}):{PROXY_PORT}"
# Google's published images, pinned to the JAX this release is tested with (the proxy's JAX
# must match the user's image); every tag is ``jax-<version>``.
IMAGE_REPOSITORY = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways"
JAX_TAG = "jax-0.10.2"
DEFAULT_SERVER_IMAGE = f"{IMAGE_REPOSITORY}/server:{JAX_TAG}"
DEFAULT_PROXY_IMAGE = f"{IMAGE_REPOSITORY}/proxy_server:{JAX_TAG}"
DEFAULT_HEAD_NODE_SELECTOR: Mapping[str, str] = {NODEPOOL_LABEL: "cpu-np"}  # xpk's CPU pool
# Pathways' name for each TPU generation, by GKE's accelerator label (xpk's device table).
TPU_VERSIONS = {
    "tpu-v4-podslice": "tpuv4",
    "tpu-v5p-slice": "tpuv5",
    "tpu-v5-lite-podslice": "tpuv5e",
    "tpu-v6e-slice": "tpuv6e",
    "tpu7": "tpu7",
    "tpu7x": "tpu7x",
}
# A tag or a digest: a Pathways image must not float (its JAX must match the head's).
_PINNED = re.compile(r"(:[\w][\w.-]{0,127}|@[A-Za-z][\w+.-]*:[0-9a-fA-F]{32,})$")


@dataclass(frozen=True)
class Pathways:
    """How a TPU job runs under Pathways (``pathways=Pathways(...)``; ``True`` for the defaults).

    :param scratch_location: ``gs://`` where Pathways keeps its scratch data (default:
        ``<output_dir>/pathways``).
    :param server_image: the resource manager's and workers' image, with a tag or digest.
    :param proxy_image: the IFRT proxy's image, with a tag or digest.
    :param worker_image: the workers' image when not ``server_image``.
    :param headless: no user code in the head: the proxy is its main container, for clients
        that connect from elsewhere (a notebook); the job runs until deleted or timed out.
    :param elastic_slices: slices that may be lost while the job goes on
        (``--num_elastic_slices``); at most ``num_slices``.
    :param max_slice_restarts: with elastic slices, restarts of each slice's workers.
    :param server_args: extra flags for the resource manager.
    :param proxy_args: extra flags for the IFRT proxy.
    :param worker_args: extra flags for every worker.
    :param head_node_selector: where the head's CPU pod runs (default: xpk's ``cpu-np`` pool).
    """

    scratch_location: str | None = None
    server_image: str = DEFAULT_SERVER_IMAGE
    proxy_image: str = DEFAULT_PROXY_IMAGE
    worker_image: str | None = None
    headless: bool = False
    elastic_slices: int = 0
    max_slice_restarts: int = 1
    server_args: Sequence[str] = ()
    proxy_args: Sequence[str] = ()
    worker_args: Sequence[str] = ()
    head_node_selector: Mapping[str, str] = field(
        default_factory=lambda: dict(DEFAULT_HEAD_NODE_SELECTOR)
    )

    def __post_init__(self) -> None:
        for name in ("server_image", "proxy_image", "worker_image"):
            image = getattr(self, name)
            if image is not None and (not isinstance(image, str) or not _PINNED.search(image)):
                raise ValueError(
                    f"pathways {name} {image!r} needs a tag or a digest (e.g. "
                    f"{DEFAULT_SERVER_IMAGE!r}): Pathways' JAX must match the one in image=."
                )
        for name in ("server_args", "proxy_args", "worker_args"):
            args = getattr(self, name)
            if isinstance(args, str) or not all(isinstance(a, str) for a in args):
                raise ValueError(f"pathways {name} must be a list of strings, got {args!r}.")
        for name in ("elastic_slices", "max_slice_restarts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"pathways {name} must be an integer >= 0, got {value!r}.")
        if self.headless not in (True, False):
            raise ValueError(f"pathways headless must be True or False, got {self.headless!r}.")
        if self.scratch_location is not None:
            check_scratch(self.scratch_location)
        if not isinstance(self.head_node_selector, Mapping):
            raise ValueError(
                "pathways head_node_selector must be a mapping of node labels, e.g. "
                f"{dict(DEFAULT_HEAD_NODE_SELECTOR)!r}, got {self.head_node_selector!r}."
            )
        syntax.labels("pathways head_node_selector", self.head_node_selector)

    @classmethod
    def of(cls, value: object) -> Pathways | None:
        """``pathways=`` as given: False or None (off), True (the defaults), or a Pathways."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, cls):
            return value
        raise ValueError(
            f"pathways must be True, False or Pathways(...), got {type(value).__name__} {value!r}."
        )

    def scratch(self, output_dir: str | None) -> str | None:
        """Where Pathways keeps scratch data: as given, else under ``output_dir``."""
        if self.scratch_location is not None:
            return self.scratch_location
        return f"{output_dir.rstrip('/')}/pathways" if output_dir else None

    def check(self, accelerator: Accelerator, num_slices: int) -> None:
        """What the job's shape must allow, named by argument."""
        if accelerator.kind != "tpu":
            raise ValueError(
                f"pathways= runs TPU slices; {accelerator.name} is a GPU machine. Use "
                "JaxTpuSliceOperator or @task.jax_tpu, or leave pathways unset."
            )
        if self.elastic_slices > num_slices:
            raise ValueError(
                f"pathways elastic_slices={self.elastic_slices} is more than num_slices="
                f"{num_slices}: at most every slice can be elastic."
            )


def holds_scratch(location: object) -> bool:
    """Whether Pathways' servers can share their scratch data there (GCS only), unchecked."""
    found = named_store(location)
    return found is not None and found.pathways_scratch


def check_scratch(location: object) -> None:
    """Pathways' servers share their scratch data through GCS only."""
    if not holds_scratch(location):
        raise ValueError(
            f"pathways scratch location {location!r} must be a gs:// URI (e.g. "
            "'gs://bucket/pathways'): Pathways' servers share it through GCS. Set "
            "Pathways(scratch_location=...) or a gs:// output_dir."
        )
    parse_location(location, "pathways scratch_location")


def instance_type(accelerator: Accelerator) -> str:
    """``<pathways tpu version>:<topology>``, as the resource manager's --instance_type."""
    version = TPU_VERSIONS[accelerator.node_selector[TPU_ACCELERATOR_LABEL]]
    return f"{version}:{accelerator.topology}"
