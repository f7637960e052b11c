"""A try's phases as spans of Airflow's own trace: ``jax.queued``, then each restart
attempt's ``jax.startup``, ``jax.productive`` and ``jax.lost``, with the times the goodput
ledger measured (``reporting/goodput.py``), under the span that is current when the try
publishes its outcome (the worker's ``worker.<task_id>`` span, when ``[traces] otel_on``).

The phases are known only once the job ends (a deferred wait runs in the triggerer), so the
spans are written then, each with its own start and end; nothing is sent when no span records
(tracing off), and OpenTelemetry is imported only then.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

TRACER = "airflow_provider_jax"
SPAN_PREFIX = "jax."


def send_phases(ledger: Mapping[str, Any], attributes: Mapping[str, str]) -> int:
    """Each phase of ``ledger`` as a child of the current span; how many were sent.

    :param ledger: the try's goodput ledger, with its ``phases``.
    :param attributes: what every span carries besides its attempt (the job's tags).
    """
    try:
        from opentelemetry import trace
    except ImportError:  # an Airflow without OpenTelemetry has no trace to add to
        return 0
    if not trace.get_current_span().is_recording():
        return 0
    tracer = trace.get_tracer(TRACER)
    sent = 0
    try:
        for phase in ledger.get("phases") or []:
            span = tracer.start_span(
                SPAN_PREFIX + phase["phase"],
                start_time=int(phase["start"] * 1e9),
                attributes={
                    **attributes,
                    **({"jax.attempt": phase["attempt"]} if phase["attempt"] is not None else {}),
                },
            )
            span.end(end_time=int(phase["end"] * 1e9))
            sent += 1
    except Exception as err:  # a span is never worth failing a finished run for
        log.warning("trace spans not sent: %s", err)
    return sent
