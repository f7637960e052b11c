"""The documentation pages the docs tests read: every page of docs/ and the README."""

from __future__ import annotations

import functools
import re

from tests.support.jobset_schema import REPO

PAGES = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]


@functools.cache
def prose(name: str) -> str:
    """``docs/<name>`` (or the README) as one line: a phrase is found whatever its line
    breaks and indentation."""
    path = REPO / name if name == "README.md" else REPO / "docs" / name
    return re.sub(r"\s+", " ", path.read_text())
