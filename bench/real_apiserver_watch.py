"""The shared JobSet watch against the real kube-apiserver, next to the emulator (#38).

N = 1,000 ``JobSetTrigger``\\ s wait in one triggerer process (``bench.triggerer_child``) on
the real control plane of the tests (``harness/real_cluster``: kube-apiserver and etcd
with the JobSet controller, kube-controller-manager and Kueue running), as the ``airflow``
identity with the docs' Role. Then the same N on the emulator, in the same run.

- The JobSets are created suspended, on a control plane without nodes: 2,000 pods would
  measure this machine, not the watch. Each is ended by writing, through the
  status subresource, the terminal condition the JobSet controller writes (``Completed``, or
  ``Failed`` for one in ten), at a random moment over the window.
- While all wait, kube-apiserver is stopped and started again (every watch cut, the watch
  cache rebuilt from etcd); the JobSets end after it is back.
- Requests are counted from the API server's audit log: every request of the triggerer's
  user after the triggers start, by resource and verb. Leader log streaming is off in both
  runs (no pod runs here); ``bench.triggerer_scale`` measures it on the emulator.

Run from the repository root (the control plane's binaries: ``make control-plane``)::

    python -m bench.real_apiserver_watch [--jobs 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.emulated_cluster import cpu_between, percentile
from bench.scale_report import FAIL_EVERY, TARGET_P95, schedule
from bench.targets import QUICK, Targets, quick

NAMESPACE = "default"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["airflow-jax"]
- level: None
"""


def audited_plane(directory: Path, nodes: tuple[Any, ...] = ()) -> Any:
    """A control plane whose API server writes an audit log of the triggerer's requests, with
    ``nodes`` (none: the JobSets' pods are not run)."""
    from harness.real_cluster.control_plane import ControlPlane

    class Audited(ControlPlane):
        def apiserver_argv(self, apiserver: Path) -> list[str]:
            policy = self.directory / "audit-policy.yaml"
            policy.write_text(AUDIT_POLICY)
            return [
                *super().apiserver_argv(apiserver),
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.directory / 'logs' / 'audit.log'}",
                "--audit-log-format=json",
            ]

    return Audited(directory, nodes)


def audited_requests(plane: Any, since: float) -> list[dict[str, Any]]:
    """One audit event per request (by audit id) received at or after ``since`` (epoch)."""
    seen: dict[str, dict[str, Any]] = {}
    for line in (plane.directory / "logs" / "audit.log").read_text().splitlines():
        event = json.loads(line)
        if received(event) >= since:
            seen.setdefault(event["auditID"], event)
    return list(seen.values())


def received(event: dict[str, Any]) -> float:
    """When the API server received an audited request (epoch seconds)."""
    from datetime import datetime

    stamp = event["requestReceivedTimestamp"].replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp()


def suspended(name: str) -> dict[str, Any]:
    from harness.jobsets import manifest

    body = manifest(name)
    body["spec"]["suspend"] = True
    return body


def end(hook: Any, name: str, failed: bool) -> None:
    """Write the terminal condition the JobSet controller writes when its Jobs end."""
    from airflow_provider_jax.manifest.jobset_api import GROUP, PLURAL, VERSION

    kind = "Failed" if failed else "Completed"
    condition = {
        "type": kind,
        "status": "True",
        "reason": "FailedJobs" if failed else "AllJobsCompleted",
        "message": "jobset failed" if failed else "jobset completed successfully",
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    hook.custom_object_client.patch_namespaced_custom_object_status(
        GROUP, VERSION, NAMESPACE, PLURAL, name, {"status": {"conditions": [condition]}}
    )


def real_run(jobs: int, seed: int, work: Path) -> dict[str, Any]:
    """N triggers on the real control plane; what they cost and how fast they heard."""
    from airflow_provider_jax.hooks.cluster import KubernetesCluster
    from harness.k8s_emulator.rbac import docs_role_manifest
    from harness.real_cluster.identities import connection, grant

    plane = audited_plane(work / "control-plane").up()
    try:
        grant(plane.api(), docs_role_manifest())
        os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = connection(plane.kubeconfig("admin"))
        hook = KubernetesCluster().hook()
        rng = random.Random(seed)
        names = [f"job-{i:04d}-0123456789" for i in range(jobs)]
        failing = set(rng.sample(names, jobs // FAIL_EVERY))
        with ThreadPoolExecutor(8) as pool:
            created = list(pool.map(hook.create_jobset, [suspended(n) for n in names]))
        uids = {c["metadata"]["name"]: c["metadata"]["uid"] for c in created}
        when = schedule(jobs)
        env = {
            **os.environ,
            "AIRFLOW_CONN_KUBERNETES_DEFAULT": connection(plane.kubeconfig("airflow")),
        }
        child = subprocess.Popen(
            [
                *(sys.executable, "-m", "bench.triggerer_child", "watch", "--log-lines", "0"),
                *("--timeout", str(when.window + 120), "--count-at", str(when.count_at)),
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        finished: dict[str, float] = {}
        try:
            assert child.stdout is not None and child.stdin is not None
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError("the triggerer process did not start")
            since = time.time()
            child.stdin.write(json.dumps(uids) + "\n")
            child.stdin.flush()
            time.sleep(when.quiet_from)  # the bench's own clock: every trigger waits by then
            restart_began = time.monotonic()
            plane.stop_apiserver()
            plane.start_apiserver()
            restart_s = time.monotonic() - restart_began
            ends = sorted((rng.uniform(5.0, when.window - when.first_finish), n) for n in names)
            _end_on_time(hook, ends, failing, finished)
            out, _ = child.communicate(timeout=180)
        finally:
            child.kill()
        report = json.loads(out.strip().splitlines()[-1])
        requests = audited_requests(plane, since)
    finally:
        plane.down()
    expected = {n: "failed" if n in failing else "success" for n in names}
    fired = report["fired"]
    if wrong := {n: fired.get(n) for n in names if fired.get(n, (0, None))[1] != expected[n]}:
        print(f"  {len(wrong)} triggers fired wrong or not at all, e.g. {list(wrong.items())[:3]}")
    status = [r for r in requests if (r.get("objectRef") or {}).get("resource") == "jobsets"]
    by_verb: dict[str, int] = {}
    for r in status:
        by_verb[r["verb"]] = by_verb.get(r["verb"], 0) + 1
    start, stop = report["start"], report["end"]
    job_minutes = sum(fired.get(n, (stop, None))[0] - start for n in names) / 60
    return {
        "where": "kube-apiserver",
        "jobs": jobs,
        "requests": len(status),
        "by_verb": by_verb,
        "other_requests": len(requests) - len(status),
        "rate": len(status) / job_minutes,
        "p50": percentile([fired[n][0] - finished[n] for n in names if n in fired], 0.5),
        "p95": percentile([fired[n][0] - finished[n] for n in names if n in fired], 0.95),
        "missed": sum(1 for n in names if fired.get(n, (0, None))[1] != expected[n]),
        "cpu_share": cpu_between(report["cpu"], start, stop) / (stop - start),
        "rss_per_job_kib": (report["waiting_rss_kib"] - report["baseline_rss_kib"]) / jobs,
        "restart_s": restart_s,
    }


def _end_on_time(
    hook: Any, ends: list[tuple[float, str]], failing: set[str], finished: dict[str, float]
) -> None:
    """End each JobSet ``delay`` seconds from now, noting when its status was written."""

    def one(name: str) -> None:
        end(hook, name, name in failing)
        finished[name] = time.monotonic()

    began = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        for delay, name in ends:
            time.sleep(max(began + delay - time.monotonic(), 0))
            pool.submit(one, name)


def emulator_run(jobs: int, seed: int, work: Path) -> dict[str, Any]:
    """The same N on the emulator, as ``bench.triggerer_scale`` runs it, without log streams."""
    from bench.triggerer_scale import Kind, scenario
    from harness.certificates import self_signed
    from harness.k8s_emulator import Emulator

    emulator = Emulator(lambda body: []).start(self_signed(work))
    kubeconfig = emulator.kubeconfig(work / "kubeconfig.json")
    os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = emulator.connection(kubeconfig)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    try:
        row = scenario(
            emulator, Kind("watch", "emulator"), jobs, schedule(jobs), 30.0, seed, env, 0
        )
    finally:
        emulator.stop()
    return {
        "where": "emulator",
        "jobs": jobs,
        "requests": row.status_requests,
        "by_verb": {"list": row.lists},
        "other_requests": row.log_requests,
        "rate": row.status_rate,
        "p50": row.p50,
        "p95": row.p95,
        "missed": row.missed,
        "cpu_share": row.cpu_share,
        "rss_per_job_kib": 1024 * row.waiting_rss_per_job,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=quick(1000, 20))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-airflow-"))
    import logging

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-real-apiserver-") as scratch:
        work = Path(scratch)  # etcd's data (100 MiB at N = 1,000), certificates, kubeconfigs
        rows = [real_run(args.jobs, args.seed, work)]
        if not QUICK:  # the emulator's side is bench.triggerer_scale's scenario, quick-run there
            rows.append(emulator_run(args.jobs, args.seed, work))
    print(
        f"\n{args.jobs} JobSetTriggers, one triggerer process, no log streams; 1 in "
        f"{FAIL_EVERY} JobSets fails."
    )
    header = (
        f"{'API server':16} {'N':>5} {'status req':>10} {'/job/min':>8} {'p50 s':>6} "
        f"{'p95 s':>6} {'CPU %':>6} {'KiB/job':>7} {'missed':>6}  by verb"
    )
    print(header + "\n" + "-" * len(header))
    for r in rows:
        print(
            f"{r['where']:16} {r['jobs']:>5} {r['requests']:>10} {r['rate']:>8.4f} "
            f"{r['p50']:>6.2f} {r['p95']:>6.2f} {r['cpu_share']:>6.1%} "
            f"{r['rss_per_job_kib']:>7.0f} {r['missed']:>6}  {r['by_verb']}"
        )
    real = rows[0]
    print(
        f"kube-apiserver: stopped and started again while all waited ({real['restart_s']:.1f} s "
        "down); the JobSets ended after. emulator: watches cut within 30 s, 2 restarts with "
        "their history gone (410 Gone), JobSets ending meanwhile."
    )
    targets = Targets()
    for r in rows:
        targets.at_most(f"{r['where']}: p95 detection latency, s", r["p95"], TARGET_P95)
        targets.at_most(f"{r['where']}: missed completions", r["missed"], 0)
    targets.exit()


if __name__ == "__main__":
    sys.exit(main())
