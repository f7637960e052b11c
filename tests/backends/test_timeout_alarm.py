"""Only Airflow's own execution_timeout alarm is disarmed or held back, and only while it is
pending."""

from __future__ import annotations

import signal
import time

from airflow_provider_jax.backends.timeout_alarm import (
    BACKSTOP_S,
    airflows_alarm_is_armed,
    disarm_airflows_alarm,
    postpone_airflows_alarm,
)


def test_airflows_alarm_is_disarmed_and_anyone_elses_is_left_alone():
    from airflow.sdk.execution_time.timeout import timeout

    assert not airflows_alarm_is_armed()
    disarm_airflows_alarm()  # nothing armed: nothing to do
    with timeout(60):
        assert airflows_alarm_is_armed()
        disarm_airflows_alarm()
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
        assert not airflows_alarm_is_armed()
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    signal.setitimer(signal.ITIMER_REAL, 60)  # someone else's alarm (pytest-timeout's, say)
    try:
        assert not airflows_alarm_is_armed()
        disarm_airflows_alarm()
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_airflows_alarm_due_after_our_deadline_moves_to_the_backstop_and_no_other():
    from airflow.sdk.execution_time.timeout import timeout

    def due() -> float:
        return signal.getitimer(signal.ITIMER_REAL)[0]

    with timeout(5):  # the same timeout as ours, counted a little later
        postpone_airflows_alarm(time.time() + 4)
        assert 4 + BACKSTOP_S - 1 < due() <= 4 + BACKSTOP_S
        postpone_airflows_alarm(None)  # no deadline of ours: nothing to hold back for
        assert due() > BACKSTOP_S
    with timeout(5):  # due before our deadline: a shorter timeout, left as it is
        postpone_airflows_alarm(time.time() + 10)
        assert due() <= 5
    with timeout(500):  # due past the backstop already: never brought forward
        postpone_airflows_alarm(time.time() + 4)
        assert due() > 400
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    signal.setitimer(signal.ITIMER_REAL, 5)  # someone else's alarm
    try:
        postpone_airflows_alarm(time.time() + 4)
        assert due() <= 5
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
