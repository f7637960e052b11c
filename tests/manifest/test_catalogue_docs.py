"""``docs/accelerators.md`` is written from the catalogue, and what it shows is xpk's."""

from __future__ import annotations

import re

from airflow_provider_jax.manifest.accelerators.catalogue_docs import PAGE, page
from tests.support.tpu_table import TPU_TABLE, XPK_ROWS


def test_the_accelerators_page_is_written_from_the_catalogue():
    assert PAGE.read_text() == page(), "docs/accelerators.md is stale: run `make docs`"


def test_every_slice_the_page_shows_is_xpks():
    """The oracle is xpk's own table (and, for the single-host v5e slices xpk leaves out,
    the tests' copy of GKE's), not the code that wrote the page."""
    xpk = {
        row["device_type"]: (
            row["topology"],
            row["vms_per_slice"],
            row["chips_per_vm"],
            row["gke_accelerator"],
            row["gce_machine_type"],
        )
        for row in XPK_ROWS
        if row["kind"] == "tpu"
    }
    known = {name: (topo, hosts, per, gke, m) for name, gke, topo, hosts, per, m in TPU_TABLE}
    rows = re.findall(
        r"^\| `(tpu[^`]+)` \| `([^`]+)` \| (\d+) × (\d+) \| `([^`]+)` \| `([^`]+)` \|$",
        page(),
        re.M,
    )
    assert len(rows) > 50
    for name, topology, hosts, per_host, gke, machine in rows:
        short = name.removeprefix("tpu-")
        want = xpk.get(short) or known[short]
        assert (topology, int(hosts), int(per_host), gke, machine) == want, name


def test_every_gpu_device_type_the_page_names_is_xpks():
    xpk = {row["device_type"]: row for row in XPK_ROWS if row["kind"] == "gpu"}
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (`[^|]+`) \| `(nvidia-[^`]+)` \|", page(), re.M)
    assert len(rows) == 8
    named = [n for _, types, _ in rows for n in re.findall(r"`([^`]+)`", types)]
    for _, types, label in rows:
        for name in re.findall(r"`([^`]+)`", types):
            if name in xpk:
                assert xpk[name]["gke_accelerator"] == label, name
    assert set(xpk) <= set(named), set(xpk) - set(named)
