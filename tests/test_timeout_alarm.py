"""Only Airflow's own execution_timeout alarm is disarmed, and only while it is pending."""

from __future__ import annotations

import signal

from airflow_provider_jax.timeout_alarm import airflows_alarm_is_armed, disarm_airflows_alarm


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
