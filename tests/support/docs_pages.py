"""The documentation pages the docs tests read: every page of docs/ and the README."""

from __future__ import annotations

from tests.support.jobset_schema import REPO

PAGES = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
