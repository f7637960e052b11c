"""The metrics list in the docs is the one the code sends."""

from __future__ import annotations

import re

from airflow_provider_jax.metrics.names import METRICS
from tests.support.jobset_schema import REPO

ROW = re.compile(r"^\| `([a-z_.<>]+)` \| (\w+) \| ([a-z_, ]*) \|", re.M)


def test_the_docs_list_every_metric_with_its_kind_and_tags():
    page = (REPO / "docs" / "observability.md").read_text()
    listed = {
        name: (kind, tuple(t.strip() for t in tags.split(",") if t.strip()))
        for name, kind, tags in ROW.findall(page)
    }
    assert listed == {m.name: (m.kind, m.tags) for m in METRICS}
