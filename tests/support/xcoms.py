"""XComs read straight from an Airflow home's SQLite metadata DB."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def xcoms(db: Path, dag_id: str, task_id: str, key: str = "return_value") -> dict[str, Any]:
    """``{run_id: value}`` of one task's XCom ``key``."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT run_id, value FROM xcom WHERE dag_id = ? AND task_id = ? AND key = ?",
            (dag_id, task_id, key),
        ).fetchall()
    return {run_id: json.loads(value) for run_id, value in rows}
