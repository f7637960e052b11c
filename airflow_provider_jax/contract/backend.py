"""The backend contract: what the operator hands every backend and what it gets back.

The operator builds the manifest, hands it to a backend with plain :class:`JobSettings`
(never the operator itself), and keeps every XCom push and the deferral in one place:

    started = backend.start(manifest)      # submit (or reattach), or start local processes
    outcome = backend.wait(started)        # block until it ends; or the operator defers on
                                           # started.deferral and later calls
    outcome = backend.complete(event)      # with the trigger's event
    # a failure raises JaxJobFailed, its goodput ledger attached
    backend.kill()                         # on_kill, or when Airflow fails a deferred task

Implementations are imported only when a task runs (:func:`get_backend`), never at parse.
This module sits below the triggers in the layers: a trigger carries :class:`WatchOptions`,
and the backends that defer on it import the trigger.
"""

from __future__ import annotations

import datetime
import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import one_of
from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.contract.watch_options import WatchOptions

if TYPE_CHECKING:
    from airflow.triggers.base import BaseTrigger


@dataclass(frozen=True)
class BackendTraits:
    """What the operators need to know of a backend before it is imported (at parse): they
    ask these, never the backend's name.

    :param module: the module that holds its ``BACKEND`` class (imported when a task runs).
    :param remote: its pods run on other machines, so a local ``Data`` folder is staged
        through ``output_dir``, and what the pods write (diagnostics, Pathways' scratch) needs
        a shared ``output_dir``.
    :param needs_image: its pods run a container image (``image=`` or ``[jax] default_image``).
    :param reads_connection: it reads the Kubernetes connection's extras (the in-place restart
        agent's image, multi-tier checkpointing, Pathways' images).
    """

    module: str
    remote: bool
    needs_image: bool
    reads_connection: bool


BACKEND_TRAITS = {
    "kubernetes": BackendTraits(
        "airflow_provider_jax.backends.kubernetes",
        remote=True,
        needs_image=True,
        reads_connection=True,
    ),
    "local": BackendTraits(
        "airflow_provider_jax.backends.local.backend",
        remote=False,
        needs_image=False,
        reads_connection=False,
    ),
}
BACKENDS = tuple(BACKEND_TRAITS)
ON_FINISH_ACTIONS = ("delete_jobset", "delete_succeeded_jobset", "keep_jobset")
# execution_timeout is also the cluster's own deadline for the JobSet's Jobs, this much later,
# so Airflow's timeout (which explains itself) acts first whenever Airflow is there to act.
CLUSTER_DEADLINE_GRACE_S = 60
# A deferred try's trigger fires no sooner than this after it deferred. The worker's exit on
# defer() reaches the scheduler as an executor "success" for the same try, seconds later on a
# busy scheduler; Airflow 3.3 fails a try whose resumed run is already queued or running when
# it drains that event ("state mismatch", apache/airflow#72716), so a JobSet that ends within
# seconds of the deferral would cost a retry. A real slice takes longer than this to start.
RESUME_SETTLE_S = float(settings.SETTINGS["resume_settle_seconds"].default)
# XComs live in a JSON column of the metadata database, are loaded by every task that pulls
# them and shown in the UI. Airflow's own providers cap XCom output at 48 KiB; MySQL's default
# max_allowed_packet (64 MiB) is the hard ceiling of the common backends. 1 MiB leaves room for
# metrics and small tables; anything bigger belongs in output_dir, returned as a path.
DEFAULT_MAX_RESULT_BYTES = int(settings.SETTINGS["max_result_bytes"].default)


@dataclass(frozen=True)
class ClusterSettings:
    """Which Kubernetes cluster: a Kubernetes connection, or a GKE cluster by name.

    :param kubernetes_conn_id: the ``kubernetes`` connection (ignored when GKE is named).
    :param cluster_name: a GKE cluster's name; its endpoint is looked up through Google.
    :param project_id: its project (default: the Google connection's).
    :param location: its region or zone.
    :param gcp_conn_id: the Google connection, for GKE tokens and ``gs://`` results.
    :param impersonation_chain: service accounts to impersonate with it.
    """

    kubernetes_conn_id: str | None = "kubernetes_default"
    cluster_name: str | None = None
    project_id: str | None = None
    location: str | None = None
    gcp_conn_id: str = "google_cloud_default"
    impersonation_chain: str | tuple[str, ...] | None = None


@dataclass(frozen=True)
class JobSettings:
    """Everything a backend needs to run one try of one task, as plain values.

    :param name: the JobSet's name (one per task instance, across tries).
    :param namespace: its namespace.
    :param deadline: when this try's ``execution_timeout`` runs out (epoch seconds), or None.
    :param execution_timeout_s: the task's ``execution_timeout`` as configured, for messages.
    :param output_dir: the rendered ``output_dir``: the only place a result is read from.
    :param on_finish_action: what becomes of the JobSet once it ended.
    :param deferrable: whether the operator will defer on the started job.
    :param max_result_bytes: the largest leader result that is read.
    :param cluster: which cluster (Kubernetes backend).
    :param pythonpath: folders the local processes import from (the DAG file's folder, then
        the DAGs folder); the first is also their working directory.
    :param local_secrets_dir: where the local backend reads referenced Secrets.
    :param watch: how the job is waited on and what of it reaches the task log.
    :param resume_settle_s: a deferred trigger fires no sooner than this after the deferral.
    :param local_accelerators: what the local backend's processes compute on: ``auto`` (a
        GPU job on this machine's GPUs, if it has them) or ``cpu``.
    :param expects_result: the program is a function whose return value is the result, so a
        result that cannot be read fails the task (``command=`` programs return none).
    :param elastic: an elastic job's size policy and its size now (``min_slices``), or None.
    :param local_capacity_file: the local backend's stand-in for TPU capacity (drills).
    :param goodput_clock: the try's goodput clock so far, when an elastic job runs again at
        another size on the local backend: its ledger goes on across the sizes.
    :param goodput_before: on Kubernetes, the ledger of the try's earlier JobSets (an elastic
        job's other sizes), which the next trigger's ledger adds to.
    :param log: the task's logger.
    """

    name: str
    namespace: str
    log: Any
    deadline: float | None = None
    execution_timeout_s: float | None = None
    output_dir: str | None = None
    on_finish_action: str = "delete_jobset"
    deferrable: bool = False
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    pythonpath: tuple[str, ...] = ()
    local_secrets_dir: str | None = None
    watch: WatchOptions = field(default_factory=WatchOptions)
    resume_settle_s: float = RESUME_SETTLE_S
    local_accelerators: str = "auto"
    expects_result: bool = False
    elastic: ElasticSlices | None = None
    goodput_clock: Any = None
    goodput_before: dict[str, Any] | None = None
    local_capacity_file: str | None = None


@dataclass(frozen=True)
class Deferral:
    """What the operator defers on: the trigger, the kwargs ``execute_complete`` gets, and
    Airflow's own timeout for the trigger (a backstop behind the trigger's deadline)."""

    trigger: BaseTrigger
    kwargs: dict[str, Any]
    timeout: datetime.timedelta | None


@dataclass(frozen=True)
class Started:
    """A job that runs: its name, what to XCom about it, and how to wait without a worker."""

    name: str
    namespace: str
    links: Mapping[str, str] = field(default_factory=dict)  # extra-link XCom key -> URL
    deferral: Deferral | None = None  # None: this backend can only wait in the worker
    handle: Any = None  # the backend's own state, opaque to the operator
    capacity_choice: int = 0  # the capacity list's choice it runs on (a reattach may be further)
    uid: str = ""  # the cluster's uid of the job ("" where there is none: the local backend)


@dataclass(frozen=True)
class Outcome:
    """The leader's (process 0's) return value, its last progress report, the checkpoint step
    its attempt resumed from, and the run's goodput ledger (``goodput.py``)."""

    result: Any
    report: dict[str, Any] | None = None
    resumed_from: int | None = None
    goodput: dict[str, Any] | None = None


class Backend(Protocol):
    settings: JobSettings

    def start(self, manifest: Mapping[str, Any]) -> Started: ...

    def wait(self, started: Started) -> Outcome: ...

    def complete(
        self, event: Mapping[str, Any], cluster: Mapping[str, Any] | None = None
    ) -> Outcome: ...

    def kill(self) -> None: ...


def resolve_backend(name: str | None) -> str:
    """``name``, or ``[jax] default_backend`` when None: a backend this provider has."""
    if name is None:
        name = settings.get("default_backend")
        one_of("[jax] default_backend", name, BACKENDS)
    return name


def get_backend(name: str, settings: JobSettings) -> Backend:
    """The backend called ``name``, imported now (a task runs), never at DAG parse."""
    one_of("backend", name, BACKENDS)
    module = importlib.import_module(BACKEND_TRAITS[name].module)
    return module.BACKEND(settings)


def try_deadline(
    execution_timeout: datetime.timedelta | None, started: datetime.datetime | None, now: float
) -> float | None:
    """When this try's ``execution_timeout`` runs out, as epoch seconds."""
    if execution_timeout is None:
        return None
    start = started.timestamp() if started is not None else now
    return start + execution_timeout.total_seconds()


def log_deadline(log: Any, deadline: float | None) -> None:
    """Say when this try's ``execution_timeout`` runs out: it counts from the try's start as
    the task sees it, a little after the start date the UI shows (Airflow's own latency)."""
    if deadline is not None:
        at = datetime.datetime.fromtimestamp(deadline, tz=datetime.UTC)
        at_ms = at.isoformat(timespec="milliseconds")
        log.info("This try's execution_timeout runs out at %s.", at_ms)


def cluster_deadline_seconds(execution_timeout: datetime.timedelta | None) -> int | None:
    """``activeDeadlineSeconds`` for the JobSet's Jobs: the timeout plus a grace, so a slice
    stops even when no part of Airflow is left to stop it."""
    if execution_timeout is None:
        return None
    return math.ceil(execution_timeout.total_seconds()) + CLUSTER_DEADLINE_GRACE_S
