"""Not collected by the suite (no ``test_`` prefix): the run that ``test_reaper.py`` starts and
kills. It holds the real control plane and PostgreSQL, says their pids, then waits to be killed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

PIDS_FILE = "AIRFLOW_JAX_HELD_PIDS"


def test_hold_the_services_until_killed(real_cluster, postgres):
    pids = [c.pid for c in real_cluster.components if c.pid is not None] + [postgres.pid]
    Path(os.environ[PIDS_FILE]).write_text(json.dumps(pids))
    time.sleep(600)
