"""Which failures restart the slice and which fail it at once: the Job's ``podFailurePolicy``
and the JobSet's ``failurePolicy`` rules, rendered here and applied by the same functions in
the local backend and the test emulator, so all three agree with the cluster.

- A pod with the ``DisruptionTarget`` condition (preempted, evicted, its node drained) counts
  as a plain failure whatever its exit code: the Job fails (``BackoffLimitExceeded``) and the
  JobSet restarts every Job, within ``maxRestarts``.
- A container exiting with a code outside the restartable set (a Python exception in the
  user's code) fails its Job by rule (``PodFailurePolicy``), and the JobSet's ``FailJobSet``
  rule fails the JobSet at once: no restart is spent on a bug. xpk renders the same pair.
- Everything else (signals, exit 42 for a lost peer, 124 for a hung host, the user's
  ``restart_on_exit_codes``) restarts the slice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_jax.runtime.exits import RESTARTABLE_EXIT_CODES, as_reported

DISRUPTION_TARGET = "DisruptionTarget"
POD_FAILURE_POLICY = "PodFailurePolicy"  # the Job's failure reason when a FailJob rule fired
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
CODE_ERROR_RULE = {
    "name": "FailOnCodeError",
    "action": "FailJobSet",
    "onJobFailureReasons": [POD_FAILURE_POLICY],
}
# JobSet's own words when a FailJobSet rule fires (its constants.FailJobSetActionReason).
FAIL_JOBSET_REASON = "FailJobSetFailurePolicyAction"
# Whole-slice restarts on disruptions. Bugs no longer spend them, so a few cover a day of
# spot preemptions and maintenance; a slice disrupted more often than that within one try is
# a capacity problem, and Airflow's retries (a fresh JobSet) remain.
DEFAULT_MAX_RESTARTS = 3
MAX_EXIT_CODE_VALUES = 255  # Kubernetes' limit on onExitCodes.values


def restartable_codes(extra: Iterable[int] = ()) -> list[int]:
    """The exit codes that restart the slice, sorted as the API server requires."""
    return sorted(RESTARTABLE_EXIT_CODES.union(extra))


def check_exit_codes(codes: Iterable[int]) -> tuple[int, ...]:
    """``restart_on_exit_codes`` as given, or a ValueError that says what is wrong."""
    codes = tuple(codes)
    bad = [c for c in codes if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 255]
    if bad:
        raise ValueError(
            f"restart_on_exit_codes must be exit codes 1-255 (0 is success), got {bad!r}."
        )
    if len(restartable_codes(codes)) > MAX_EXIT_CODE_VALUES:
        raise ValueError("restart_on_exit_codes makes more than 255 codes, Kubernetes' limit.")
    return codes


def pod_failure_policy(container: str, extra_codes: Iterable[int] = ()) -> dict[str, Any]:
    return {
        "rules": [
            {"action": "Count", "onPodConditions": [{"type": DISRUPTION_TARGET, "status": "True"}]},
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": container,
                    "operator": "NotIn",
                    "values": restartable_codes(extra_codes),
                },
            },
        ]
    }


def job_failure_reason(
    policy: Mapping[str, Any] | None, exit_code: int, conditions: Iterable[str] = ()
) -> str:
    """The reason the Job controller gives a Job (``backoffLimit: 0``) whose pod failed with
    ``exit_code`` and pod ``conditions`` (types that are True), by its first matching rule."""
    code = as_reported(exit_code)
    for rule in (policy or {}).get("rules") or ():
        wanted = {c["type"] for c in rule.get("onPodConditions") or ()}
        on_codes = rule.get("onExitCodes")
        if wanted and wanted & set(conditions):
            matched = True
        elif on_codes:
            inside = code in on_codes["values"]
            matched = inside if on_codes["operator"] == "In" else not inside
        else:
            matched = False
        if matched:
            return POD_FAILURE_POLICY if rule["action"] == "FailJob" else BACKOFF_LIMIT_EXCEEDED
    return BACKOFF_LIMIT_EXCEEDED


def jobset_action(jobset_policy: Mapping[str, Any] | None, job_reason: str) -> dict[str, Any]:
    """The JobSet rule that applies to a Job that failed for ``job_reason`` (the first whose
    reasons include it, or that names none), else the default: restart within maxRestarts."""
    for rule in (jobset_policy or {}).get("rules") or ():
        if job_reason in rule.get("onJobFailureReasons", [job_reason]):
            return dict(rule)
    return {"action": "RestartJobSet"}


def restartable_in(manifest: Mapping[str, Any]) -> frozenset[int]:
    """The exit codes a JobSet manifest restarts on (its FailJob rule's ``NotIn`` values)."""
    for rule in _job_policy(manifest).get("rules") or ():
        codes = rule.get("onExitCodes")
        if rule.get("action") == "FailJob" and codes and codes.get("operator") == "NotIn":
            return frozenset(codes["values"])
    return RESTARTABLE_EXIT_CODES


def on_failure(
    manifest: Mapping[str, Any], exit_code: int, conditions: Iterable[str] = ()
) -> tuple[str, dict[str, Any]]:
    """What the Job and JobSet controllers do when a pod of ``manifest`` fails so: the Job's
    failure reason and the JobSet rule that then applies."""
    reason = job_failure_reason(_job_policy(manifest), exit_code, conditions)
    return reason, jobset_action(manifest["spec"].get("failurePolicy"), reason)


def _job_policy(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    return manifest["spec"]["replicatedJobs"][0]["template"]["spec"].get("podFailurePolicy") or {}
