"""Seeds shared by runs (``harness/real_cluster/images.py``): a prune keeps every seed a
cluster's nodes still hold, even after the run that started them has ended (``make
cluster``), and removes the old ones and a killed run's partial one. The holders here are
real processes that inherited the lease, as a node's process does."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from harness.real_cluster import images


def a_seed(seeds: Path, name: str) -> Path:
    seed = seeds / name
    (seed / "root" / "io.containerd.content.v1.content").mkdir(parents=True)
    (seed / "imported.json").write_text("[]")
    return seed


def aged(seed: Path, age_s: float) -> None:
    then = time.time() - age_s
    os.utime(seed, (then, then))


def test_a_seed_a_running_node_holds_outlives_its_run_and_the_old_ones_go(tmp_path):
    seeds = tmp_path / "seeds"
    held, old, *newest = (a_seed(seeds, f"s{i}") for i in range(6))
    partial = seeds / ".partial-left-by-a-killed-run"
    (partial / "root").mkdir(parents=True)
    held_images = images.Images({}, held / "root", (), images.SeedLease(held))
    node = subprocess.Popen(["sleep", "600"], pass_fds=held_images.inherited())  # a node
    assert held_images.lease is not None
    held_images.lease.release()  # the run that started it ended; the node runs on
    held_images.lease.release()  # twice, as a second down() does: nothing else is closed
    assert held_images.inherited() == ()
    try:
        for age, seed in enumerate([held, old, *newest][::-1]):
            aged(seed, 100 * age)  # held and old the oldest
        images.prune_seeds(seeds)
        left = sorted(p.name for p in seeds.iterdir())
        assert left == ["s0", "s3", "s4", "s5"], left  # the 3 newest, and the held one
        assert (held / "root").is_dir()
    finally:
        node.kill()
        node.wait()
    images.prune_seeds(seeds)  # its node gone, nothing holds it
    assert sorted(p.name for p in seeds.iterdir()) == ["s3", "s4", "s5"]
