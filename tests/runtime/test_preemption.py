"""``runtime.on_preemption``: SIGTERM becomes a hook, then a restartable exit (143).

With ``jax.distributed`` running, JAX's preemption service owns SIGTERM and the hook runs at
the step it agrees on (the real-JAX drill is in ``test_resume.py``); without it, a stdlib
handler notes the signal and the hook runs at the process's next report.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from airflow_provider_jax.runtime.exits import EXIT_SIGTERM
from tests.support.local_runs import LOG, run_outcome


@pytest.mark.parametrize(
    "slow_save",
    [
        False,
        # The hung-host watchdog is stopped when the preemption's save begins: the pod's grace
        # period bounds that save, and its report (a disruption, 143) is the process's, not a
        # hang's.
        pytest.param(True, id="a-save-longer-than-progress_timeout"),
    ],
)
def test_without_jax_the_hook_runs_at_the_next_report_and_the_set_restarts(
    tmp_path: Path, caplog, slow_save: bool
):
    caplog.set_level(logging.INFO, logger=LOG.name)
    marker = tmp_path / "saved"
    slow = {"progress_timeout": 1} if slow_save else {}
    outcome = run_outcome(
        "preempted_without_jax",
        max_restarts=1,
        initialize_distributed=False,
        entrypoint_kwargs={"marker": str(marker), "save_s": 4.0 if slow_save else 0.0},
        **slow,
    )
    assert outcome.result == {"restart_attempt": 1}
    assert marker.read_text() == "1:3"  # host 1, at the report right after the signal
    assert EXIT_SIGTERM == 143
    restarts = [m for m in caplog.messages if m.startswith("job: restart")]
    assert restarts == [
        "job: restart 1/1 after a disruption on [0/1]: Preempted: SIGTERM, on_preemption ran "
        "at step 3"
    ], restarts
    assert outcome.goodput["restarts"] == {"disruption": 1}
