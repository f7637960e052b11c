"""The Kubernetes backend: submit (or reattach) → the operator defers on
:class:`JobSetTrigger`, or the very same trigger is awaited inline when ``deferrable=False`` →
read the leader's result, or explain the failure → apply ``on_finish_action``.

Each task instance has one JobSet name across all its tries, so a retry finds the JobSet of
the try before. Still running after a worker crash, it is reattached. But one that an earlier
try had *deferred* on is never reattached: a deferred try ends only through a path that deletes
its JobSet (a user's clear or mark, a timeout), and that delete may still be on its way from
the old trigger, so the new try deletes it itself (by uid), waits until it is gone, and starts
afresh. Finished or being deleted, it is likewise replaced. There is never a second JobSet for
one task instance, and a cleared task always reruns on a fresh one.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_jax.backends.kubernetes_failure import explain_failure
from airflow_provider_jax.backends.off_main_thread import wait_off_main_thread
from airflow_provider_jax.backends.result import ResultReader
from airflow_provider_jax.backends.timeout_alarm import (
    BACKSTOP_S,
    disarm_airflows_alarm,
    postpone_airflows_alarm,
)
from airflow_provider_jax.contract.backend import (
    Deferral,
    JobSettings,
    Outcome,
    Started,
    log_deadline,
)
from airflow_provider_jax.exceptions import (
    JaxJobFailed,
    JobSetConflict,
    NoCapacity,
    SlicesChanged,
)
from airflow_provider_jax.hooks.cluster import KubernetesCluster, cluster_from
from airflow_provider_jax.hooks.jobset import JobSetExists, JobSetOperations
from airflow_provider_jax.hooks.multikueue import check_before_submit, unreadable_result
from airflow_provider_jax.links.jobset import (
    JobSetLogsLink,
    JobSetWorkloadLink,
    KueueEventsLink,
    cloud_logging_url,
    gke_workload_url,
    kueue_events_url,
)
from airflow_provider_jax.manifest import status
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.manifest.provider_keys import (
    DEFERRED_BY_TRY_ANNOTATION,
    annotation,
    capacity_choice,
    slices_annotated,
)
from airflow_provider_jax.runtime.messages import format_report, parse_message, resumed_step
from airflow_provider_jax.triggers.jobset import JobSetTrigger
from airflow_provider_jax.triggers.watch.events import (
    FAILED,
    RESIZE,
    SUCCESS,
    TIMEOUT,
    JobSetEvent,
)
from airflow_provider_jax.triggers.watch.queue_wait import NO_CAPACITY, QUEUE_REASONS

GONE_TIMEOUT_S = 600  # longest wait for an earlier try's JobSet to be deleted


@dataclass(frozen=True)
class JobSetRef:
    """One JobSet, down to its uid: deleting by uid never touches a successor."""

    cluster: KubernetesCluster
    name: str
    namespace: str
    uid: str | None
    deferred_by: str | None = field(default=None, compare=False)  # its annotation, as found
    capacity_choice: int = field(default=0, compare=False)  # its annotation, as found
    slices: int | None = field(default=None, compare=False)  # an elastic job's, as found
    managed_by: str | None = field(default=None, compare=False)  # spec.managedBy (MultiKueue)

    @property
    def where(self) -> str:
        return f"JobSet {self.namespace}/{self.name}"


class KubernetesBackend:
    """Runs the JobSet on a cluster (a Kubernetes connection, or GKE by name)."""

    def __init__(self, settings: JobSettings) -> None:
        self.settings = settings
        self.log = settings.log
        self._ref: JobSetRef | None = None
        self._cluster: KubernetesCluster | None = None

    @property
    def cluster(self) -> KubernetesCluster:
        if self._cluster is None:  # a GKE endpoint lookup: once, and only when needed
            self._cluster = cluster_from(**asdict(self.settings.cluster))
        return self._cluster

    def start(self, manifest: Mapping[str, Any]) -> Started:
        from kubernetes.config import ConfigException

        deferring = self.settings.deferrable
        try_number = str((manifest["metadata"].get("labels") or {}).get(status.TRY_NUMBER_LABEL))
        if deferring:
            # The try that creates it defers on it: claimed in the create itself, not by a
            # second request. (A worker lost between the two makes its retry start afresh
            # instead of reattaching: a window of milliseconds, for a request on every start.)
            meta = manifest["metadata"]
            claim = {**(meta.get("annotations") or {}), DEFERRED_BY_TRY_ANNOTATION: try_number}
            manifest = {**manifest, "metadata": {**meta, "annotations": claim}}
        try:
            hook = self.cluster.hook()
            extras = self.cluster.connection_extras()
            try:
                check_before_submit(extras, self.settings.output_dir, _connection_exists)
            except ValueError as err:
                raise AirflowFailException(f"Nothing was submitted: {err}") from err
            ref = self._ref = submit(hook, self.cluster, manifest, self.log)
        except ConfigException as err:  # no kubeconfig, not in a pod: nothing was created
            raise AirflowFailException(no_cluster_configured(self.cluster, err)) from err
        if self.settings.output_dir is None and (why := unreadable_result(ref.managed_by, extras)):
            _delete(hook, ref, self.log)  # before any pod ran: not after the run
            raise AirflowFailException(f"{ref.where} was deleted at once: {why}")
        try:
            return self._started(hook, ref, manifest, try_number)
        except BaseException as err:
            self.log.error(
                "%s was created, but starting to wait on it failed (%s: %s): deleting it.",
                ref.where,
                type(err).__name__,
                err,
            )
            try:
                _delete(hook, ref, self.log)
            except Exception:
                self.log.exception("Could not delete %s; delete it by hand.", ref.where)
            raise

    def _started(
        self, hook: JobSetOperations, ref: JobSetRef, manifest: Mapping[str, Any], try_number: str
    ) -> Started:
        """What waits on the JobSet just created (or reattached to): the trigger, the
        deferral's claim and timeout, the links."""
        deferring = self.settings.deferrable
        deadline = self.settings.deadline
        log_deadline(self.log, deadline)
        trigger = JobSetTrigger(
            name=ref.name,
            namespace=ref.namespace,
            uid=ref.uid or "",
            cluster=self.cluster.to_dict(),
            deadline=deadline,
            fire_not_before=self._fire_not_before(),
            elastic=self._elastic(ref),
            goodput_before=self.settings.goodput_before,
            **self.settings.watch.as_row(),
        )
        deferral = None
        if deferring:
            if ref.deferred_by != try_number:  # reattached to one not claimed by this try
                claim = {DEFERRED_BY_TRY_ANNOTATION: try_number}
                hook.annotate_jobset(ref.name, ref.namespace, ref.uid, claim)
            timeout = None
            if deadline is not None:
                left = deadline - time.time() + BACKSTOP_S
                timeout = datetime.timedelta(seconds=max(left, 1))
            deferral = Deferral(trigger, {"cluster": self.cluster.to_dict()}, timeout)
        queued = KUEUE_QUEUE_LABEL in (manifest["metadata"].get("labels") or {})
        links = self._links(ref, queued)
        return Started(
            ref.name, ref.namespace, links, deferral, trigger, ref.capacity_choice, ref.uid or ""
        )

    def _elastic(self, ref: JobSetRef) -> dict[str, Any] | None:
        """An elastic job's policy for its trigger, at the size of the JobSet it waits on (a
        reattached one may be smaller than this try asked for)."""
        elastic = self.settings.elastic
        if elastic is None:
            return None
        return elastic.at(ref.slices or elastic.full).as_row()

    def _fire_not_before(self) -> float | None:
        """When a deferred trigger may fire at the earliest (see ``RESUME_SETTLE_S``)."""
        settle = self.settings.resume_settle_s
        return time.time() + settle if self.settings.deferrable and settle > 0 else None

    def _links(self, ref: JobSetRef, queued: bool) -> dict[str, str]:
        """The GKE console pages of the JobSet; ``queued``: Kueue's events for it too."""
        c = self.settings.cluster
        if not (c.project_id and c.location and c.cluster_name):
            return {}
        where = {
            "project_id": c.project_id,
            "location": c.location,
            "cluster_name": c.cluster_name,
            "namespace": ref.namespace,
            "name": ref.name,
        }
        links = {
            JobSetLogsLink().xcom_key: cloud_logging_url(**where),
            JobSetWorkloadLink().xcom_key: gke_workload_url(**where),
        }
        if queued:
            links[KueueEventsLink().xcom_key] = kueue_events_url(**where)
        return links

    def wait(self, started: Started) -> Outcome:
        """Await the trigger in this process (``deferrable=False``), off the main thread:
        Airflow's execution_timeout alarm then interrupts only the waiting, and its
        ``on_kill`` deletes the JobSet (see ``off_main_thread``)."""
        trigger: JobSetTrigger = started.handle
        extras = self.cluster.connection_extras()
        work = trigger.wait(connection_extras=extras)
        postpone_airflows_alarm(trigger.deadline)  # the wait ends itself at the deadline
        event = wait_off_main_thread(work, name=f"wait-{trigger.name}")
        return self.complete(event.to_dict(), self.cluster.to_dict())

    def complete(
        self, event: Mapping[str, Any], cluster: Mapping[str, Any] | None = None
    ) -> Outcome:
        """The trigger's event as the task's outcome or error, reading before deleting."""
        if cluster:
            self._cluster = KubernetesCluster.from_dict(cluster)
        ended = JobSetEvent.from_dict(event)
        ref = self._ref = JobSetRef(self.cluster, ended.name, ended.namespace, ended.uid or None)
        hook = self.cluster.hook()
        if ended.status == SUCCESS:
            if ended.restarts:
                self.log.info("%s finished after: %s", ref.where, "; ".join(ended.restarts))
            try:
                outcome = self._leader_result(hook, ref, ended.leader_message)
            finally:
                self._finish(hook, ref, succeeded=True)
            resumed = outcome.resumed_from
            if resumed is None and ended.goodput:
                resumed = ended.goodput.get("resumed_from")
            return replace(outcome, resumed_from=resumed, goodput=ended.goodput)
        if ended.status == RESIZE:  # the trigger deleted it; the operator submits the next
            raise SlicesChanged(ended.slices or 0, ended.reason, ended.message, ended.goodput)
        if ended.status == TIMEOUT:
            disarm_airflows_alarm()
            _delete(hook, ref, self.log)
            from airflow.sdk.exceptions import AirflowTaskTimeout

            raise AirflowTaskTimeout(f"{ref.where} was deleted: {ended.message}.")
        # Never got its capacity (or lost it for good): no host has anything to say, and
        # whatever on_finish_action says, the JobSet goes, as it holds quota or nodes.
        capacity_lost = ended.status == FAILED and ended.reason in QUEUE_REASONS
        if ended.status == FAILED and not capacity_lost:
            error = explain_failure(hook, ref.name, ref.namespace, ended)
        else:
            failed = NoCapacity if ended.reason == NO_CAPACITY else JaxJobFailed
            error = failed(f"{ref.where}: {ended.message}")
        error.goodput = ended.goodput
        if capacity_lost:
            _delete(hook, ref, self.log)
        else:
            self._finish(hook, ref, succeeded=False, ended=ended.status == FAILED)
        raise error

    def _leader_result(
        self, hook: JobSetOperations, ref: JobSetRef, read: str | None = None
    ) -> Outcome:
        """From the leader's termination message (``read``: as the trigger read it on a
        MultiKueue worker), else ``output_dir``'s result.json."""
        if read is None:
            leader = status.leader_pod(hook.list_jobset_pods(ref.name, ref.namespace))
            read = status.termination_message(leader) if leader else None
        message = parse_message(read) if read else None
        reader = ResultReader(
            self.settings.output_dir,
            self.settings.cluster.gcp_conn_id,
            self.settings.cluster.impersonation_chain,
            self.settings.max_result_bytes,
            expected=self.settings.expects_result,
        )
        ok = message if message and message["ok"] else None
        if ok and ok.get("report"):  # its log may not have been streamed: say it here
            self.log.info("Leader's last report: %s", format_report(ok["report"]))
        return Outcome(*reader.from_message(ok, self.log), resumed_from=resumed_step(ok))

    def _finish(
        self, hook: JobSetOperations, ref: JobSetRef, *, succeeded: bool, ended: bool = True
    ) -> None:
        """Apply ``on_finish_action``. Once the JobSet has ended, a delete that fails leaves
        an object, not a workload: say so and keep the task's own outcome."""
        action = self.settings.on_finish_action
        if action == "keep_jobset" or (action == "delete_succeeded_jobset" and not succeeded):
            self.log.info("Keeping %s (on_finish_action=%s).", ref.where, action)
            return
        try:
            _delete(hook, ref, self.log)
        except Exception:
            if not ended:
                raise
            self.log.exception(
                "Could not delete the finished %s; remove it with: kubectl delete jobset -n %s %s",
                ref.where,
                ref.namespace,
                ref.name,
            )

    def kill(self) -> None:
        """Delete the task's JobSet (Foreground): on kill, on a timeout while blocking, and
        when Airflow fails a deferred task itself (its trigger timeout, a crashed trigger)."""
        ref = self._ref or JobSetRef(
            self.cluster, self.settings.name, self.settings.namespace, None
        )
        _delete(ref.cluster.hook(), ref, self.log)


def _connection_exists(conn_id: str) -> bool:
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return False
    return True


def no_cluster_configured(cluster: KubernetesCluster, err: Exception) -> str:
    """What a first-time user sees instead of the client's "Service host/port is not set"."""
    return (
        f"No Kubernetes cluster is configured for backend='kubernetes' (the client says: "
        f"{err}). To run on this machine instead, pass backend='local' to the operator or set "
        "[jax] default_backend = local (AIRFLOW__JAX__DEFAULT_BACKEND=local). To run on GKE, "
        "give cluster_name with project_id and location (and gcp_conn_id), or point the "
        f"{cluster.conn_id or 'kubernetes_default'!r} connection (kubernetes_conn_id) at a "
        "cluster: in_cluster, or a kube_config. docs/local-backend.md and "
        "docs/gke-prerequisites.md say more."
    )


def submit(
    hook: JobSetOperations, cluster: KubernetesCluster, manifest: Mapping[str, Any], log: Any
) -> JobSetRef:
    """Create the task instance's JobSet, or attach to the one there when that is safe (see
    the module's docstring); anything else of ours is deleted first, and waited for, so a
    new try never runs beside it."""
    meta = manifest["metadata"]
    name, namespace, labels = meta["name"], meta["namespace"], meta.get("labels") or {}
    if labels.get(status.MANAGED_BY_LABEL) != status.MANAGED_BY:
        # The trigger watches only labelled JobSets: this one would never be seen to finish.
        raise ValueError(
            f"JobSet {namespace}/{name} lacks the label "
            f"{status.MANAGED_BY_LABEL}={status.MANAGED_BY}; build it with build_jobset()."
        )
    for _ in range(3):
        # Create first: a fresh try (the common case) needs no read. A 409 means one is
        # there (a retry's, ours whose reply was lost, a racing try): look at it.
        try:
            created = hook.create_jobset(manifest)
        except JobSetExists:
            existing = hook.get_jobset(name, namespace)
        else:
            log.info("Created JobSet %s/%s (uid %s).", namespace, name, status.uid(created))
            return _ref(cluster, created)
        if existing is not None:
            uid = status.uid(existing)
            if not status.owned_by(existing, labels):
                owner = {
                    k: existing["metadata"].get("labels", {}).get(k) for k in status.IDENTITY_LABELS
                }
                raise JobSetConflict(
                    f"JobSet {namespace}/{name} exists but was not made for this task instance "
                    f"(its labels say {owner}). Delete it, or give the operator another name."
                )
            why_not = _why_not_reattach(existing, labels)
            if why_not is None:
                state = status.terminal_state(existing)
                why = "still running" if state is None else "made by this try"
                log.info("Reattaching to JobSet %s/%s (uid %s): %s.", namespace, name, uid, why)
                return _ref(cluster, existing)
            log.info("JobSet %s/%s (uid %s) %s; replacing it.", namespace, name, uid, why_not)
            hook.delete_jobset(name, namespace, uid)
            try:
                hook.wait_until_gone(name, namespace, uid, timeout=GONE_TIMEOUT_S)
            except TimeoutError as err:
                raise JobSetConflict(f"Cannot start afresh: {err}") from None
    raise JobSetConflict(f"JobSet {namespace}/{name} keeps reappearing; is another try running?")


def _why_not_reattach(jobset: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    """None when a try may wait on this JobSet of its task instance; else why not."""
    if status.is_deleting(jobset):
        return "is being deleted"
    same_try = status.same_try(jobset, labels)
    state = status.terminal_state(jobset)
    if state is not None and not same_try:
        return f"from an earlier try is {state.lower()}"
    deferred_by = _deferred_by(jobset)
    if deferred_by is not None and not same_try:
        return (
            f"was deferred on by try {deferred_by}, which ended while deferred (cleared, "
            "marked or timed out), so its trigger is deleting it"
        )
    return None


def _ref(cluster: KubernetesCluster, jobset: Mapping[str, Any]) -> JobSetRef:
    meta = jobset["metadata"]
    return JobSetRef(
        cluster,
        meta["name"],
        meta["namespace"],
        status.uid(jobset),
        _deferred_by(jobset),
        capacity_choice(jobset),
        slices_annotated(jobset),
        (jobset.get("spec") or {}).get("managedBy"),
    )


def _deferred_by(jobset: Mapping[str, Any]) -> str | None:
    """The try that deferred on ``jobset`` (its annotation), if one did."""
    return annotation(jobset, DEFERRED_BY_TRY_ANNOTATION)


def _delete(hook: JobSetOperations, ref: JobSetRef, log: Any) -> None:
    if hook.delete_jobset(ref.name, ref.namespace, ref.uid):
        log.info("Deleted %s (Foreground: its pods go first).", ref.where)


BACKEND = KubernetesBackend
