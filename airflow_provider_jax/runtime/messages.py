"""What a JAX process tells the outside world, and how the outside reads it back.

Stdlib only: the same module runs inside user images (writing) and in Airflow (reading).
Everything is JSON; nothing is ever pickled.

- The termination message (at most 4096 bytes, Kubernetes' limit) says how a process ended:
  ``{"ok": true, "result": ..., "report": ...}`` from the leader, ``{"ok": true}`` from others,
  ``{"ok": true, "result_uri": ".../result.json", ...}`` when the result is too big for it
  (with ``"resumed_from": N`` when the run resumed from a checkpoint), and
  ``{"ok": false, "error": "...", "traceback": "...", "class": "code error"}`` on failure
  (``class``: see ``runtime.exits``).
- A progress report is one stdout line: ``REPORT_PREFIX`` followed by a JSON object.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, TypeGuard

from airflow_provider_jax.runtime.exits import CODE_ERROR

TERMINATION_MESSAGE_LIMIT = 4096
REPORT_PREFIX = "::airflow-jax-report::"
TOTAL_STEPS_KEY = "total_steps"  # in a report: the run's length, for percentage and ETA


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, sort_keys=True)


def success_message(
    result: Any = None,
    report: Any = None,
    result_uri: str | None = None,
    resumed_from: int | None = None,
) -> str:
    """The leader's (or a worker's) success message. Raises ValueError if it does not fit."""
    body: dict[str, Any] = {"ok": True}
    if resumed_from is not None:
        body["resumed_from"] = resumed_from
    if result_uri is not None:
        body["result_uri"] = result_uri
    elif result is not None:
        body["result"] = result
    if report is not None:
        body["report"] = report
    text = _dump(body)
    if len(text.encode()) > TERMINATION_MESSAGE_LIMIT:
        raise ValueError(f"termination message is {len(text.encode())} bytes")
    return text


def failure_message(
    error: str,
    traceback: str,
    kind: str | None = None,
    dump: str | None = None,
    types: Sequence[str] = (),
) -> str:
    """A failure message that always fits: the traceback keeps its tail, where the cause is.
    ``kind`` is the failure's class (``runtime.exits``), when the process knows it; ``dump``
    the folder its debug dump goes to (``debug_dump=True``); ``types`` the exception's class
    and its bases, which Airflow's retry policy decides by."""
    body: dict[str, Any] = {"ok": False, "error": error[:512], "traceback": ""}
    if types:
        body["types"] = [name[:MAX_TYPE_NAME] for name in types[:MAX_TYPES]]
    if kind is not None:
        body["class"] = kind
    if dump:
        body["dump"] = dump[:MAX_DUMP_URI]
    budget = TERMINATION_MESSAGE_LIMIT - len(_dump(body))
    tail = traceback
    while (size := len(_dump(tail).encode()) - 2) > budget:
        keep = max(0, len(tail) * budget // size - 3)
        tail = "..." + (tail[-keep:] if keep else "")
    return _dump({**body, "traceback": tail})


MAX_DUMP_URI = 512  # a debug dump folder's URI in a failure message
# Around the traceback a failed process writes to its stderr: where only its own log is read
# (``kubectl logs``) it is there, and the task log, which shows it once in the failure's
# block, leaves the lines between these two out of the hosts' streamed lines.
FAILURE_BEGIN = "[airflow-jax] this process failed; its traceback:"
FAILURE_END = "[airflow-jax] end of the traceback"
MAX_TYPES, MAX_TYPE_NAME = 12, 120  # an exception's class and bases, in a failure message


def write_termination(text: str) -> None:
    """Leave ``text`` as this process's termination message (where the pod spec says)."""
    from airflow_provider_jax.runtime.env import DEFAULT_TERMINATION_PATH, TERMINATION_PATH_ENV

    path = os.environ.get(TERMINATION_PATH_ENV, DEFAULT_TERMINATION_PATH)
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as err:  # e.g. no /dev/termination-log outside Kubernetes
        print(
            f"airflow-jax: cannot write the termination message to {path}: {err}", file=sys.stderr
        )


def parse_message(text: str | None) -> dict[str, Any] | None:
    """Read a termination message; None when absent or not ours (e.g. a plain log tail)."""
    if not text:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body if isinstance(body, dict) and isinstance(body.get("ok"), bool) else None


def reported_class(text: str | None) -> str | None:
    """The class of failure a termination message reports (``exits``: code error, lost peer,
    ...); None when it reports none (a success, no message, not ours)."""
    body = parse_message(text)
    if body is None or body["ok"]:
        return None
    said = body.get("class")
    return said if isinstance(said, str) else CODE_ERROR


def host_tag(slice_index: int, host_index: int) -> str:
    """``[slice/host]``: how every log line and error names one JAX process (one pod)."""
    return f"[{slice_index}/{host_index}]"


RESUMED_LINE = "airflow-jax: resumed from step "
_RESUMED = re.compile(re.escape(RESUMED_LINE) + r"(\d{1,18})")


def resumed_line(step: int) -> str:
    """What process 0 prints when it resumes: readable, and parsed by both backends."""
    return f"{RESUMED_LINE}{step}"


def parse_resumed(line: str) -> int | None:
    """The step in a :func:`resumed_line`, or None for any other line."""
    found = _RESUMED.fullmatch(line.strip())
    return int(found.group(1)) if found else None


CALLING_LINE = "airflow-jax: start-up done, calling "


def calling_line(function: str) -> str:
    """What process 0 prints as it calls the user's function: where the runtime's own start-up
    (interpreter, packages, ``jax.distributed``, data) ends, for a function that never reports."""
    return f"{CALLING_LINE}{function}"


def is_calling_line(line: str) -> bool:
    """Whether ``line`` is a :func:`calling_line`."""
    return line.startswith(CALLING_LINE)


def resumed_step(message: dict[str, Any] | None) -> int | None:
    """The ``resumed_from`` of a parsed success message, if it is a step (a pod writes it)."""
    step = (message or {}).get("resumed_from")
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def report_line(report: dict[str, Any]) -> str:
    return REPORT_PREFIX + _dump(report)


MAX_REPORT_CHARS = 4096


def parse_report(line: str) -> dict[str, Any] | None:
    """The report in a log line, or None if the line is ordinary output."""
    head, sep, tail = line.strip().partition(REPORT_PREFIX)
    if not sep or head or len(tail) > MAX_REPORT_CHARS:  # a pod's output: bounded before parsing
        return None
    try:
        report = json.loads(tail)
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def format_report(report: dict[str, Any], extra: tuple[str, ...] = ()) -> str:
    """A report as a readable log line: ``step 120: loss=0.0312 lr=0.001``, or with a total
    ``step 120/1000 (12%): ...``; ``extra`` parts (a rate, an ETA) follow the step."""
    step, total = report.get("step"), report.get(TOTAL_STEPS_KEY)
    head = [] if step is None else [f"step {step}"]
    if head and is_count(step) and is_count(total) and total > 0:
        head[0] += f"/{total} ({100 * min(step, total) // total}%)"
    head.extend(extra)
    metrics = " ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in report.items()
        if k not in ("step", TOTAL_STEPS_KEY)
    )
    shown = " · ".join(head)
    return f"{shown}: {metrics}" if shown and metrics else shown or metrics


def is_count(value: Any) -> TypeGuard[int]:
    """An int that is not a bool: a step or a step total."""
    return isinstance(value, int) and not isinstance(value, bool)


def tenth_of(step: Any, total: Any) -> int:
    """Which tenth of the run ``step`` is in; -1 without a step and a total. A report that
    enters a new tenth is always shown: by the runtime, and in the task log."""
    if not is_count(step) or not is_count(total) or total <= 0:
        return -1
    return min(10, 10 * step // total)
