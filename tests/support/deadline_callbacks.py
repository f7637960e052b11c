"""Deadline callbacks for the deadline tests: each appends the call it got to a JSON-lines
file, so a test sees every call, its kwargs and its ``context``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def record(path: str, context: dict[str, Any], **kwargs: Any) -> None:
    with Path(path).open("a") as out:
        out.write(json.dumps({"kind": "sync", "kwargs": kwargs, "context": context}) + "\n")


async def record_async(path: str, context: dict[str, Any], **kwargs: Any) -> None:
    with Path(path).open("a") as out:
        out.write(json.dumps({"kind": "async", "kwargs": kwargs, "context": context}) + "\n")
