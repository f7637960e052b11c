"""The JobSet controller and kubelet, as far as a JobSet's client can observe them.

A JobSet gets one pod per (slice, host) with JobSet's labels and annotations (through
``plan_pods``, the same expansion the local backend uses). A failed pod fails its Job, and the
JobSet either restarts every Job (``restarts`` + 1, pods with the next ``restart-attempt``) or,
once ``failurePolicy.maxRestarts`` is spent, fails. Deletion honours the propagation policy.
"""

from __future__ import annotations

import asyncio
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.backends.local.pods import plan_pods
from airflow_provider_jax.manifest.failure_policy import (
    FAIL_JOBSET_REASON,
    jobset_action,
    on_failure,
)
from airflow_provider_jax.manifest.jobset_api import REPLICATED_JOB_LABEL
from harness.k8s_emulator.kubelet import Exit, PodRun, Runner, killed_within
from harness.k8s_emulator.objects import fail_message, pod_object, set_condition
from harness.k8s_emulator.scheduler import Scheduler, unschedulable
from harness.k8s_emulator.store import Store, now

JOBSET, POD = "jobsets", "pods"
GC_DELAY = 0.5  # seconds before a restarted attempt's pods are gone


@dataclass(eq=False)
class JobSetRun:
    namespace: str
    name: str
    uid: str
    pods: list[PodRun] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


def _suffix() -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=5))


class Controller:
    def __init__(self, store: Store, runner: Callable[[], Runner]) -> None:
        self.store = store
        self.runner = runner
        self.runs: dict[tuple[str, str], JobSetRun] = {}
        self.pods: dict[tuple[str, str], PodRun] = {}
        self.deletions: list[tuple[str, str]] = []  # (name, propagation policy)
        self.finished_at: dict[str, float] = {}  # JobSet name -> monotonic time it finished
        self.unpullable: dict[str, str] = {}  # image -> why its pull fails, as kubelet says
        # Seconds a Foreground-deleted JobSet stays (deletionTimestamp set) after its pods are
        # gone: finalizers, a slow garbage collector or many pods make real deletions slow.
        self.deletion_hold = 0.0
        self.scheduler: Scheduler | None = None  # None: every pod is placed at once
        # Kubernetes 1.28+ labels an Indexed Job's pods with their completion index as well
        # as annotating them (PodIndexLabel); False: an older cluster's annotation only.
        self.pod_index_label = True
        # Told when a JobSet finished (its terminal state) or was deleted (None): Kueue.
        self.on_gone: Callable[[str, str, str | None], None] = lambda ns, name, state: None
        self._background: set[asyncio.Task[None]] = set()

    # JobSets -------------------------------------------------------------------------------

    def started(self, jobset: dict[str, Any]) -> None:
        meta = jobset["metadata"]
        run = JobSetRun(meta["namespace"], meta["name"], meta["uid"])
        self.runs[(run.namespace, run.name)] = run
        if not jobset["spec"].get("suspend"):  # a Kueue-queued JobSet waits for admission
            run.task = asyncio.create_task(self._reconcile(run, jobset))

    async def suspend(self, namespace: str, name: str) -> None:
        """``spec.suspend`` set (Kueue evicted it): the Jobs are suspended, so their pods are
        stopped and deleted; the restart count stays (JobSet's Suspended condition)."""
        jobset = self.store.get(JOBSET, namespace, name)
        run = self.runs.get((namespace, name))
        if jobset is None or run is None:
            return
        jobset["spec"]["suspend"] = True
        set_condition(jobset["status"], "Suspended", "SuspendedJobs", "jobset is suspended")
        self.store.update(JOBSET, jobset)
        if run.task is not None:
            run.task.cancel()
            await asyncio.gather(run.task, return_exceptions=True)
            run.task = None
        await self._stop_pods(run.pods, delete=True)
        run.pods = []
        self._update_status(run)

    def resume(self, namespace: str, name: str) -> None:
        """``spec.suspend`` cleared (Kueue admitted it): the Jobs start, and with them each
        Job's ``activeDeadlineSeconds`` afresh, as a resumed Job's startTime is reset."""
        jobset = self.store.get(JOBSET, namespace, name)
        run = self.runs.get((namespace, name))
        if jobset is None or run is None or run.task is not None:
            return
        jobset["spec"]["suspend"] = False
        if any(c["type"] == "Suspended" for c in jobset["status"].get("conditions") or ()):
            set_condition(jobset["status"], "Suspended", "ResumeJobs", "jobset is resumed")
            jobset["status"]["conditions"][-1]["status"] = "False"
        jobset = self.store.update(JOBSET, jobset)
        restarts = jobset["status"].get("restarts", 0)
        run.task = asyncio.create_task(self._reconcile(run, jobset, restarts))

    async def _reconcile(self, run: JobSetRun, jobset: dict[str, Any], restarts: int = 0) -> None:
        """Run attempts until one completes, or a failure's rules (the Job's pod failure
        policy, then the JobSet's failure policy, as ``failure_policy`` reads them) or the
        restart budget end it."""
        max_restarts = (jobset["spec"].get("failurePolicy") or {}).get("maxRestarts", 0)
        job_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
        deadline = job_spec.get("activeDeadlineSeconds")  # per attempt: Jobs are recreated
        while True:
            run.pods = self._create_pods(run, jobset, restarts)
            self._update_status(run, restarts=restarts)
            try:
                async with asyncio.timeout(deadline):
                    failed = await self._run_attempt(run)
            except TimeoutError:  # the Job controller fails the Job: DeadlineExceeded
                await self._stop_pods(run.pods, delete=False)
                rule = jobset_action(jobset["spec"].get("failurePolicy"), "DeadlineExceeded")
                if rule.get("action") != "FailJobSet":
                    raise NotImplementedError(
                        "the emulator fails JobSets at their deadline only"
                    ) from None
                job = f"{run.name}-{run.pods[0].plan.labels[REPLICATED_JOB_LABEL]}-0"
                self._finish(run, "Failed", FAIL_JOBSET_REASON, fail_message(job))
                return
            if failed is None:
                self._finish(run, "Completed", "AllJobsCompleted", "jobset completed successfully")
                return
            job = f"{run.name}-{failed.plan.labels[REPLICATED_JOB_LABEL]}-{failed.slice_index}"
            assert failed.exit is not None
            _, rule = on_failure(jobset, failed.exit.code, failed.conditions)
            if rule["action"] == "FailJobSet":
                await self._stop_pods(run.pods, delete=False)
                self._finish(run, "Failed", FAIL_JOBSET_REASON, fail_message(job))
                return
            if restarts < max_restarts:
                # JobSet counts the restart first; its old Jobs (and their pods) go after.
                restarts += 1
                self._update_status(run, restarts=restarts)
                await self._stop_pods(run.pods, delete=False)
                old = run.pods
                self._spawn(self._gc_pods(old))
                continue
            await self._stop_pods(run.pods, delete=False)
            if max_restarts:
                reason, message = (
                    "ReachedMaxRestarts",
                    "jobset failed due to reaching max number of restarts",
                )
            else:
                reason, message = "FailedJobs", "jobset failed due to one or more job failures"
            self._finish(run, "Failed", reason, f"{message} (first failed job: {job})")
            return

    async def _gc_pods(self, pods: list[PodRun]) -> None:
        """The garbage collector removes a restarted attempt's pods shortly after."""
        await asyncio.sleep(GC_DELAY)
        self._remove_pods(pods)

    def _remove_pods(self, pods: list[PodRun]) -> None:
        """By identity: a JobSet recreated under the same name may already have these names."""
        for pod in pods:
            if self.pods.get((pod.namespace, pod.name)) is pod:
                self.store.remove(POD, pod.namespace, pod.name)
                self.pods.pop((pod.namespace, pod.name), None)

    def _create_pods(self, run: JobSetRun, jobset: dict[str, Any], attempt: int) -> list[PodRun]:
        pod_specs = {
            rjob["name"]: rjob["template"]["spec"]["template"]["spec"]
            for rjob in jobset["spec"]["replicatedJobs"]
        }
        pods = []
        for plan in plan_pods(jobset, restart_attempt=attempt):
            rjob = plan.labels[REPLICATED_JOB_LABEL]
            pod = PodRun(
                name=f"{plan.name}-{_suffix()}",
                namespace=run.namespace,
                jobset=run.name,
                attempt=attempt,
                plan=plan,
                container=pod_specs[rjob]["containers"][0],
                manifest=jobset,
            )
            job_name = f"{run.name}-{rjob}-{plan.slice_index}"
            self.store.create(
                POD, pod_object(pod, plan, job_name, pod_specs[rjob], self.pod_index_label)
            )
            self.pods[(run.namespace, pod.name)] = pod
            pods.append(pod)
        return pods

    async def _run_attempt(self, run: JobSetRun) -> PodRun | None:
        """Run every pod; return the first that fails (its slice's Job fails), or None."""
        runner = self.runner()
        for pod in run.pods:
            pod.task = asyncio.create_task(self._run_pod(run, pod, runner))
        pending = {pod.task for pod in run.pods}
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for pod in run.pods:
                if pod.task in done and pod.exit is not None and pod.exit.code != 0:
                    return pod
        return None

    async def _run_pod(self, run: JobSetRun, pod: PodRun, runner: Runner) -> Exit:
        try:
            if not await self._schedule(pod):
                pod.ended(Exit(143))  # deleted while Pending: it never ran
                return Exit(143)
            return await self._start(run, pod, runner)
        finally:
            if self.scheduler:
                self.scheduler.release(pod.name)

    async def _schedule(self, pod: PodRun) -> bool:
        """Bind the pod to a node, waiting while it fits nowhere; False if killed first."""
        obj = self.store.get(POD, pod.namespace, pod.name)
        while self.scheduler and obj and (why := self.scheduler.place(obj)) is not None:
            obj["status"]["conditions"] = [unschedulable(why)]
            obj = self.store.update(POD, obj)
            if self.scheduler.scale_up(obj):
                continue
            waits = {
                asyncio.ensure_future(pod.killed.wait()),
                asyncio.ensure_future(self.scheduler.freed.wait()),
            }
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()
            if pod.killed.is_set():
                return False
            obj = self.store.get(POD, pod.namespace, pod.name)
        if obj is None or pod.killed.is_set():
            return False
        obj["status"] = {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now()}],
            "containerStatuses": [
                {
                    "name": pod.container["name"],
                    "image": pod.container["image"],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                }
            ],
        }
        self.store.update(POD, obj)
        return True

    async def _start(self, run: JobSetRun, pod: PodRun, runner: Runner) -> Exit:
        image = pod.container["image"]
        if image in self.unpullable:  # kubelet retries the pull for ever, backing off
            pull_error = {"reason": "ErrImagePull", "message": self.unpullable[image]}
            self._pod_status(pod, "Pending", {"waiting": pull_error}, ready=False)
            if not await killed_within(pod, 1.0):
                back_off = (
                    f'Back-off pulling image "{image}": ErrImagePull: {pull_error["message"]}'
                )
                waiting = {"reason": "ImagePullBackOff", "message": back_off}
                self._pod_status(pod, "Pending", {"waiting": waiting}, ready=False)
                await pod.killed.wait()
            pod.ended(Exit(143))
            return Exit(143)
        started = now()
        self._pod_status(pod, "Running", {"running": {"startedAt": started}}, ready=True)
        pod.running = True
        self._update_status(run)
        try:
            exit = await runner.run(pod)
        except Exception as err:  # a runner bug must show, not hang the JobSet
            exit = Exit(1, f"emulator runner failed: {err!r}")
        message = exit.message
        if (
            not message
            and exit.code
            and pod.container.get("terminationMessagePolicy") == ("FallbackToLogsOnError")
        ):
            message = pod.fallback_message()
        terminated = {
            "exitCode": exit.code,
            "reason": exit.reason,
            "startedAt": started,
            "finishedAt": now(),
        }
        if message:
            terminated["message"] = message
        pod.ended(exit)
        self._pod_status(
            pod, "Succeeded" if exit.code == 0 else "Failed", {"terminated": terminated}, False
        )
        self._update_status(run)
        return exit

    def _pod_status(self, pod: PodRun, phase: str, state: dict[str, Any], ready: bool) -> None:
        obj = self.store.get(POD, pod.namespace, pod.name)
        if obj is None:
            return
        obj["status"]["phase"] = phase
        container = obj["status"]["containerStatuses"][0]
        container.update(state=state, ready=ready, started=ready)
        self.store.update(POD, obj)

    async def _stop_pods(self, pods: list[PodRun], *, delete: bool) -> None:
        for pod in pods:
            pod.killed.set()
        await asyncio.gather(*(p.task for p in pods if p.task), return_exceptions=True)
        if delete:
            self._remove_pods(pods)

    def _update_status(self, run: JobSetRun, restarts: int | None = None) -> None:
        jobset = self.store.get(JOBSET, run.namespace, run.name)
        if jobset is None or jobset["metadata"]["uid"] != run.uid:
            return
        status = jobset.setdefault("status", {})
        if restarts is not None:
            status["restarts"] = status["restartsCountTowardsMax"] = restarts
        slices: dict[tuple[str, int], list[PodRun]] = {}
        for pod in run.pods:
            slices.setdefault((pod.plan.labels[REPLICATED_JOB_LABEL], pod.slice_index), []).append(
                pod
            )
        counts: dict[str, dict[str, int]] = {}
        for (rjob, _), members in slices.items():
            count = counts.setdefault(
                rjob, {"active": 0, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0}
            )
            exits = [p.exit for p in members]
            if any(e is not None and e.code for e in exits):
                count["failed"] += 1
            elif all(e is not None for e in exits):
                count["succeeded"] += 1
            else:
                count["active"] += 1
                count["ready"] += all(p.running for p in members)
        status["replicatedJobsStatus"] = [{"name": k, **v} for k, v in counts.items()]
        self.store.update(JOBSET, jobset)

    def _finish(self, run: JobSetRun, state: str, reason: str, message: str) -> None:
        jobset = self.store.get(JOBSET, run.namespace, run.name)
        if jobset is None or jobset["metadata"]["uid"] != run.uid:
            return
        status = jobset.setdefault("status", {})
        set_condition(status, state, reason, message)
        status["terminalState"] = state
        self.store.update(JOBSET, jobset)
        self.finished_at[run.name] = time.monotonic()
        self._update_status(run)
        self.on_gone(run.namespace, run.name, state)

    async def delete(self, namespace: str, name: str, policy: str) -> dict[str, Any] | None:
        """Delete a JobSet: Foreground removes it after its pods, Background before, Orphan
        leaves the pods running (the orphans this provider must never leave)."""
        jobset = self.store.get(JOBSET, namespace, name)
        if jobset is None:
            return None
        self.deletions.append((name, policy))
        self.on_gone(namespace, name, None)
        run = self.runs.pop((namespace, name), None)
        if run and run.task:
            run.task.cancel()
        pods = run.pods if run else []
        if policy == "Foreground":
            jobset["metadata"].update(deletionTimestamp=now(), finalizers=["foregroundDeletion"])
            marked = self.store.update(JOBSET, jobset)
            self._spawn(self._collect(namespace, name, pods, jobset["metadata"]["uid"]))
            return marked
        removed = self.store.remove(JOBSET, namespace, name)
        if policy != "Orphan":
            self._spawn(self._collect(namespace, name, pods, remove_uid=None))
        return removed

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _collect(self, namespace: str, name: str, pods: list[PodRun], remove_uid: str | None):
        """Delete ``pods``, then (Foreground) the JobSet by uid, never a successor's."""
        await self._stop_pods(pods, delete=True)
        if remove_uid is not None:
            if self.deletion_hold:
                await asyncio.sleep(self.deletion_hold)
            self.store.remove(JOBSET, namespace, name, uid=remove_uid)

    async def shutdown(self) -> None:
        for run in list(self.runs.values()):
            if run.task:
                run.task.cancel()
            await self._stop_pods(run.pods, delete=False)
        self.runs.clear()
