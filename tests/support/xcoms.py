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
    # SQLite hands a JSON column's bare number back as a number, anything else as text.
    return {
        run_id: json.loads(value) if isinstance(value, (str, bytes)) else value
        for run_id, value in rows
    }
