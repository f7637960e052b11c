"""Not collected by the suite (no ``test_`` prefix): the run that ``test_reaper.py`` starts and
kills. It holds the real cluster and PostgreSQL, says what they are (their pids, the cluster's
folder, cgroup and network link), then waits to be killed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

PIDS_FILE = "AIRFLOW_JAX_HELD_PIDS"


def test_hold_the_services_until_killed(real_cluster, postgres):
    every = [*real_cluster.components, *real_cluster.cluster.components]
    held = {
        "pids": [c.pid for c in every if c.pid is not None] + [postgres.pid],
        "directory": str(real_cluster.directory),
        "cgroup": real_cluster.cluster.cgroup,
        "link": real_cluster.cluster.network.link,
    }
    Path(os.environ[PIDS_FILE]).write_text(json.dumps(held))
    time.sleep(600)
