"""Airflow's execution_timeout alarm, seen from a try that enforces the same deadline itself.

Our deadline counts from the try's ``start_date``, as a deferred wait's does. In blocking
mode Airflow also arms a SIGALRM around ``execute``, counting from ``execute``'s start: later,
by however long the task process took to get there (seconds on a loaded worker; milliseconds
under ``airflow dags test``). Both raise ``AirflowTaskTimeout``; only one may run, or the alarm
lands in the clean-up of the other. So a blocking wait holds Airflow's alarm back to a backstop
past its deadline as it begins, and disarms it once the deadline has passed.
"""

from __future__ import annotations

import signal
import sys
import time

BACKSTOP_S = 60.0  # Airflow's own timeouts stay, as backstops, this long past our deadline


def postpone_airflows_alarm(deadline: float | None) -> None:
    """Called as a blocking wait that ends itself at ``deadline`` (epoch seconds) begins.
    Airflow's alarm for the same timeout is due just after that deadline (under ``airflow
    dags test``, milliseconds after), so at the deadline it would race our clean-up, and a
    busy machine loses that race. It moves to :data:`BACKSTOP_S` past the deadline, where it
    still stops a wait that hangs. It is never brought forward, and an alarm due before the
    deadline (a shorter timeout) is left as it is."""
    if deadline is None or not airflows_alarm_is_armed():
        return
    now = time.time()
    due = now + signal.getitimer(signal.ITIMER_REAL)[0]
    if deadline <= due < deadline + BACKSTOP_S:
        signal.setitimer(signal.ITIMER_REAL, deadline + BACKSTOP_S - now)


def disarm_airflows_alarm() -> None:
    """Called once this try's deadline has passed, before its clean-up. Left armed, Airflow's
    alarm would land in the middle of that clean-up, raising wherever the main thread is; in
    Python 3.11's ``logging`` it leaves the lock held for good (see
    ``backends.off_main_thread``). The timeout is the same one, and the clean-up and its
    error are ours. Anyone else's alarm (a test runner's, say) is left alone."""
    if airflows_alarm_is_armed():
        signal.setitimer(signal.ITIMER_REAL, 0)


def airflows_alarm_is_armed() -> bool:
    """Whether SIGALRM is pending and goes to Airflow's ``TimeoutPosix`` (not, say, a test
    runner's own timeout). Its module is loaded wherever that can be so."""
    module = sys.modules.get("airflow.sdk.execution_time.timeout")
    owner = getattr(signal.getsignal(signal.SIGALRM), "__self__", None)
    return (
        module is not None
        and isinstance(owner, getattr(module, "TimeoutPosix", ()))
        and signal.getitimer(signal.ITIMER_REAL)[0] > 0
    )
