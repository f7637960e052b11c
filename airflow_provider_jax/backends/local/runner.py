"""Run the JobSet the Kubernetes path would submit, as local processes.

It behaves like a slice, so a DAG that works here works on GKE: one process per pod, the
coordinator on 127.0.0.1, the leader's lines (or every host's, with ``stream_logs="all"``) in
the task log as ``[slice/host] ...``, each host's last lines when it fails, and when one
process fails all are stopped and the whole set restarts, up to ``failurePolicy.maxRestarts``,
unless the manifest's failure policy says the failure was a bug (``failure_policy.py``).
Processes are stopped with SIGKILL: once ``jax.distributed`` runs, JAX's preemption notifier
catches SIGTERM, so a grace period would only be a delay.
"""

from __future__ import annotations

import os
import queue
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowTaskTimeout

from airflow_provider_jax.backends.local.capacity import LocalCapacity
from airflow_provider_jax.backends.local.checkpoint_look import CheckpointLook
from airflow_provider_jax.backends.local.devices import AUTO, place
from airflow_provider_jax.backends.local.elastic_look import ElasticLook
from airflow_provider_jax.backends.local.local_tiers import local_tiers, with_tier
from airflow_provider_jax.backends.local.localize import free_ports, localize
from airflow_provider_jax.backends.local.pathways import is_pathways, single_controller
from airflow_provider_jax.backends.local.pods import PodPlan, plan_pods
from airflow_provider_jax.backends.local.processes import PodProcess, wait_any_exit
from airflow_provider_jax.backends.local.secret_files import check_runs_locally, secret_files
from airflow_provider_jax.backends.local.storage_links import linked_storage
from airflow_provider_jax.backends.timeout_alarm import disarm_airflows_alarm
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.exceptions import JaxJobFailed, SlicesChanged
from airflow_provider_jax.manifest.failure_policy import on_failure, restartable_in
from airflow_provider_jax.manifest.status import restarts_in_place
from airflow_provider_jax.reporting import host_logs
from airflow_provider_jax.reporting.failures import ProcessFailure, culprits_first, restart_line
from airflow_provider_jax.reporting.goodput import GoodputClock, chips
from airflow_provider_jax.reporting.host_logs import HostLines
from airflow_provider_jax.reporting.log_budget import LineBudget
from airflow_provider_jax.reporting.progress import Progress
from airflow_provider_jax.runtime.exits import EXIT_CODE_OF, LOST_PEER
from airflow_provider_jax.runtime.jax_cluster import NOT_JOINED_MARK
from airflow_provider_jax.runtime.messages import (
    format_report,
    parse_message,
    parse_report,
    reported_class,
)

if TYPE_CHECKING:
    from airflow.sdk.types import Logger

LOG_TAIL_LINES = 40
_TICK_S = 0.05

LOCAL_NOTICE = (
    "(log output stops here in the task log; a failure still shows each process's last lines)"
)


class LocalJobSet:
    """One run of a JobSet manifest as local processes, restarts included."""

    def __init__(
        self,
        manifest: Mapping[str, Any],
        *,
        log: Logger,
        pythonpath: Sequence[str] = (),
        timeout_s: float | None = None,
        execution_timeout_s: float | None = None,
        secrets_dir: str | None = None,
        watch: WatchOptions | None = None,
        accelerators: str = AUTO,
        capacity: LocalCapacity | None = None,
        elastic: ElasticLook | None = None,
        clock: GoodputClock | None = None,
    ) -> None:
        self.secrets = secret_files(secrets_dir)
        self.manifest = manifest
        self.pods = manifest  # what runs: a Pathways job's single controller alone
        if is_pathways(manifest):
            self.pods, line = single_controller(manifest)
            log.info("%s", line)
        plans = check_runs_locally(self.pods, self.secrets)
        # Which GPUs each process gets, or why the CPU stands in: decided before any starts.
        self.placement = place(plans, accelerators, os.environ)
        for line in self.placement.lines:
            log.info("%s", line)
        self.name: str = manifest["metadata"]["name"]
        self.max_restarts: int = manifest["spec"].get("failurePolicy", {}).get("maxRestarts", 0)
        self.log = log
        self.pythonpath = list(pythonpath)
        self.timeout_s = timeout_s  # what is left of the try's execution_timeout
        # As configured; the try had used (execution_timeout_s - timeout_s) before this run.
        self.execution_timeout_s = execution_timeout_s or timeout_s
        self.watch = watch or WatchOptions()
        # As in the triggerer: bounded per process per try, across restarts.
        self.budget = LineBudget(self.watch.log_lines, LOCAL_NOTICE)
        self.deadlines = self.watch.deadline_watch()  # each told once per try, across restarts
        self._processes: list[PodProcess] = []
        self._killed = False
        self._deadline: float | None = None
        # An elastic job made again at another size goes on with the try's clock.
        self.clock = clock or GoodputClock(created=time.time(), chips=chips(manifest))
        self.first_attempt = self.clock.next_attempt()  # this JobSet's attempt 0, in the clock
        self.capacity = capacity or LocalCapacity(None, log)
        self.elastic = elastic
        if elastic is not None:
            self.clock.resize(elastic.elastic.now, elastic.elastic.full)
        self.restarts: list[str] = []  # one line per restart, as logged
        self.tiers: str | None = None  # the folder of the processes' local tiers, if any
        self.freshness = (
            CheckpointLook(self.watch, self.clock) if self.watch.watches_checkpoints else None
        )

    def run(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Run to the end: the leader's parsed success message (None if it left none) and
        its last progress report. Reading a result it names is the caller's business."""
        # storage= mount paths, linked for the run; each process's local checkpoint tier,
        # kept across restarts as an in-memory emptyDir is, and removed with the run.
        with linked_storage(self.pods, self.log), local_tiers(self.pods) as self.tiers:
            return self._run()

    def _run(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if self.timeout_s is not None:
            self._deadline = time.monotonic() + self.timeout_s
        restarts = self.restarts
        for attempt in range(self.max_restarts + 1):
            outcome = _Attempt(self, attempt)
            try:
                failures = outcome.run()
            except SlicesChanged as move:  # the operator makes the job again at that size
                self.clock.end(outcome.clock_attempt, time.time(), "resize")
                move.clock = self.clock
                raise
            self.clock.end(
                outcome.clock_attempt, time.time(), failures[0].kind if failures else None
            )
            if self._killed:
                raise JaxJobFailed(f"JAX job {self.name} was killed; all its processes stopped.")
            if not failures:
                if restarts:
                    self.log.info("%s finished after: %s", self.name, "; ".join(restarts))
                return outcome.result()
            culprit = failures[0]
            reason, rule = on_failure(self.manifest, culprit.exit_code)
            if rule["action"] == "FailJobSet":
                summary = f"JAX job {self.name} failed ({reason}: a {culprit.kind}, no restart)"
                break
            if attempt < self.max_restarts:
                in_place = restarts_in_place(self.manifest)
                restarts.append(restart_line(attempt + 1, self.max_restarts, culprit, in_place))
                self.log.warning("%s: %s", self.name, restarts[-1])
                continue
            after = f" after {self.max_restarts} restart(s)" if self.max_restarts else ""
            summary = f"JAX job {self.name} failed{after}"
        if restarts:
            summary += "\n" + "\n".join(f"  {line}" for line in restarts)
        raise JaxJobFailed.of(summary, failures, outcome.summary(failures))

    def timed_out(self) -> str:
        """The message for a run past its deadline: the configured value and the time used
        (the try's, from its start, so the two can be compared)."""
        assert self._deadline is not None and self.execution_timeout_s is not None
        overrun = time.monotonic() - self._deadline  # past the end of the time left
        used = self.execution_timeout_s + overrun
        return (
            f"JAX job {self.name} ran past its execution_timeout of "
            f"{self.execution_timeout_s:.4g} s "
            f"({used:.1f} s used by this try); all its processes were stopped."
        )

    def kill(self) -> None:
        """Stop every process now. Safe from a signal handler (it only sends signals); the
        running :meth:`run` notices, reaps and raises."""
        self._killed = True
        for process in list(self._processes):
            process.kill()


class _Attempt:
    """One start of every pod (one JobSet restart attempt)."""

    def __init__(self, jobset: LocalJobSet, attempt: int) -> None:
        self.jobset = jobset
        coordinator_port, megascale_port = free_ports(2)
        local = localize(jobset.pods, coordinator_port, megascale_port)
        planned = plan_pods(local, restart_attempt=attempt, secrets=jobset.secrets)
        self.plans = [with_tier(plan, jobset.tiers) for plan in planned]
        self.leader = next(p for p in self.plans if (p.slice_index, p.host_index) == (0, 0))
        self.lines: queue.SimpleQueue[tuple[PodPlan, str, str, float]] = queue.SimpleQueue()
        self.attempt = attempt
        self.clock_attempt = jobset.first_attempt + attempt  # its number in the try's clock
        self.pending: list[PodPlan] = []  # pods of slices without capacity, not started
        self.pending_since: float | None = None  # since when (monotonic)
        self.stopped: set[PodProcess] = set()  # killed as their slice lost its capacity
        self.progress = Progress()  # the leader's reports, paced, with a rate and ETA
        self.tails: dict[str, deque[str]] = {
            p.name: deque(maxlen=LOG_TAIL_LINES) for p in self.plans
        }
        self.unshown: set[str] = set()  # pods with a line the task log did not get
        self.host_lines = {p.name: HostLines() for p in self.plans}  # what the log shows
        self.last_report: dict[str, Any] | None = None
        self.leader_message: str | None = None

    def run(self) -> list[ProcessFailure]:
        """Start every pod and wait for them; the processes that failed on their own (not
        those stopped because of them)."""
        jobset, log = self.jobset, self.jobset.log
        log.info(
            "Starting %d local JAX process(es) for %s (restart attempt %d).",
            len(self.plans),
            jobset.name,
            self.attempt,
        )
        processes = jobset._processes = []
        said: dict[PodProcess, str | None] = {}  # termination messages
        ending: dict[PodProcess, int] = {}  # not ended, but failed first: its exit code
        try:
            self.pending = list(self.plans)
            self._start_pending(processes)
            failed = self._wait(processes)
            said = {p: p.termination_message() for p in processes}  # before the kill
            ending = self._reported_first(processes, failed, said)
            failed += ending
        finally:
            for process in processes:
                process.kill()
            for process in processes:
                process.close()
            jobset._processes = []
            self._log_lines()
            if (held := self.progress.flush()) is not None:  # the last report, always shown
                log.info("%s %s", self.leader.tag, held)
        leader = next((p for p in processes if p.plan is self.leader), None)
        self.leader_message = leader.termination_message() if leader else None
        restartable = restartable_in(self.jobset.manifest)
        return culprits_first(
            [
                ProcessFailure.from_exit(
                    p.plan.tag,
                    said.get(p) or p.termination_message(),
                    ending.get(p, p.popen.returncode),
                    "\n".join(self.tails[p.plan.name]),
                    restartable,
                )
                for p in failed
            ]
        )

    @staticmethod
    def _reported_first(
        processes: list[PodProcess],
        failed: list[PodProcess],
        said: dict[PodProcess, str | None],
    ) -> dict[PodProcess, int]:
        """The hosts that reported a failure before the ended ones, whose pods had not ended
        yet, each with the code its runtime ends with. A lost peer follows from another
        host's end: when every ended host reports one, a host that had reported its own
        error before them is that host, its pod's end late (its init reaps and cleans up
        after the program; on a loaded machine a peer's whole pod can end first). On
        Kubernetes its container ended first, and the JobSet acts on the Job that failed
        first. A host killed on its own (SIGKILL, OOM) reports nothing: it is the cause, and
        the reports after its end are consequences."""
        if not failed or any(reported_class(said[p]) != LOST_PEER for p in failed):
            return {}
        first_loss = min(p.reported_at() for p in failed)
        return {
            p: EXIT_CODE_OF[kind]
            for p in processes
            if p not in failed
            and (kind := reported_class(said[p])) in EXIT_CODE_OF
            and p.reported_at() <= first_loss
        }

    def _start_pending(self, processes: list[PodProcess]) -> None:
        """Start the pods whose slices have capacity; once none waits, the attempt runs."""
        jobset = self.jobset
        available = jobset.capacity.slices()
        waiting = []
        for plan in self.pending:
            if jobset._killed:
                return
            if plan.slice_index >= available:
                waiting.append(plan)
                continue
            gpus = jobset.placement.of(plan)
            processes.append(PodProcess.start(plan, self._on_line, jobset.pythonpath, gpus))
        if waiting and not self.pending_since:
            lost = sorted({p.slice_index for p in waiting})
            jobset.log.warning(
                "%s: slice(s) %s have no capacity ([jax] local_capacity_file): their pods "
                "wait, as Pending pods do.",
                jobset.name,
                lost,
            )
            self.pending_since = time.monotonic()
        self.pending = waiting
        if not waiting:
            self.pending_since = None
            jobset.clock.begin(self.clock_attempt, time.time())

    def _follow_capacity(self, processes: list[PodProcess]) -> None:
        """Slices that lost their capacity lose their processes, as a preempted node pool's
        pods do; waiting ones start once it is back; an elastic job changes size."""
        jobset = self.jobset
        available = jobset.capacity.slices()
        gone = [
            p
            for p in processes
            if p.plan.slice_index >= available and p.poll() is None and p not in self.stopped
        ]
        if gone:
            self.stopped.update(gone)
            jobset.log.warning(
                "%s: slice(s) %s lost their capacity ([jax] local_capacity_file): stopping "
                "their processes.",
                jobset.name,
                sorted({p.plan.slice_index for p in gone}),
            )
            for process in gone:
                process.kill()
        if self.pending:
            self._start_pending(processes)
        if jobset.elastic is None:
            return
        if self.pending:
            jobset.elastic.pending(self.pending_since, available)
        else:
            jobset.elastic.running(available)

    def _wait(self, processes: list[PodProcess]) -> list[PodProcess]:
        """Until all exit 0, one fails, or the job is killed or times out."""
        jobset = self.jobset
        while not jobset._killed:
            if self.lines.empty():
                wait_any_exit(processes, _TICK_S)  # a line waits for the tick
            self._log_lines()
            self._follow_capacity(processes)
            if jobset.freshness is not None:
                jobset.freshness.tick(self.clock_attempt, jobset.log)
            codes = {p: p.poll() for p in processes}
            if failed := [p for p, code in codes.items() if code not in (None, 0)]:
                return failed
            if all(code == 0 for code in codes.values()) and not self.pending:
                return []
            if jobset._deadline is not None and time.monotonic() > jobset._deadline:
                disarm_airflows_alarm()  # before the clean-up in ``finally``
                raise AirflowTaskTimeout(jobset.timed_out())
        return []

    def _on_line(self, plan: PodPlan, stream: str, line: str) -> None:
        self.lines.put((plan, stream, line, time.time()))  # logged by the waiting thread

    def _log_lines(self) -> None:
        log = self.jobset.log
        try:
            item = self.lines.get_nowait()
            while True:
                plan, stream, line, at = item
                report = parse_report(line) if stream == "stdout" else None
                if report is None:
                    self.tails[plan.name].append(line)
                    kept = self.host_lines[plan.name].keep(line)
                    shows = self.shows(plan) and kept is not None
                    shown = None
                    if shows and kept is not None:
                        shown = self.jobset.budget.take(plan.tag, kept)
                    if kept is not None and kept.startswith(NOT_JOINED_MARK):
                        log.warning("%s %s", plan.tag, kept)  # whoever says it, whatever shows
                    elif shown is not None:
                        log.info("%s %s", plan.tag, shown)
                    elif kept is not None:
                        self.unshown.add(plan.name)
                    if plan is self.leader:
                        self.jobset.clock.leader_line(self.clock_attempt, line, at)
                elif plan is self.leader:
                    self.last_report = report
                    self.jobset.clock.report(self.clock_attempt, report.get("step"), at)
                    shown = self.progress.line(report, at)
                    if shown is not None and self.jobset.watch.shows_progress:
                        log.info("%s %s", plan.tag, shown)
                    for call in self.jobset.deadlines.check(self.progress, log, time.time()):
                        call()  # here, in the worker: the reader waits for it
                else:  # every process reports the same; the leader speaks for them
                    log.debug("%s %s", plan.tag, format_report(report))
                item = self.lines.get_nowait()
        except queue.Empty:
            pass

    def shows(self, plan: PodPlan) -> bool:
        """Whether ``plan``'s lines go to the task log."""
        return self.jobset.watch.shows_host(plan is self.leader)

    def summary(self, failures: Sequence[ProcessFailure]) -> list[str]:
        """The last lines of each host the task log has not shown in full and the error will
        not show (``host_logs.summary``): nothing is told twice."""
        failed = {f.tag for f in failures}
        hosts = [p for p in self.plans if p.tag not in failed and p.name in self.unshown]
        return host_logs.summary((p.tag, list(self.tails[p.name])) for p in hosts)

    def result(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The leader's success message and its last report (from the message, else from
        its last report line)."""
        body = parse_message(self.leader_message)
        if body is None or not body["ok"]:
            return None, self.last_report
        return body, body.get("report") or self.last_report
