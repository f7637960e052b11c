"""The images the real nodes hold: built offline by ``tools/images/build.py`` (cached in the
per-user cache), and imported once per cache into a containerd root (the *seed*) that each node
starts from.

A node's start is almost all importing: copying and unpacking the runtime image's layers into
its containerd (about 35 s a node on two busy cores). So the first node of a machine imports
the archives into a containerd root in the cache, stops that containerd, and every node after
links its files (``node_init.seed_root``): blobs and unpacked layers are never written in
place, and the databases are copied. A seed holds one exact set of archives: after an edit of
the training code (a new runtime archive) the next seed starts from a link of the newest seed
with the same stable layers and imports only the new archive, once for every node after (each
node importing it itself took 51 s a node, six at a time on two idle cores: `ctr` reads and
hashes the whole archive, whatever layers it already has). Where the cache is on another
filesystem than the node (no hard links across), each node imports the archives itself.

Runs share the cache (a worktree's suite, a clone's CI, a ``make cluster`` left up): a seed is
chosen, made and pruned under an exclusive ``flock`` of ``seeds/.lock`` (a second run waits for
the first's import, then links it), and every cluster holds a shared ``flock`` of its seed's
``in-use.lock`` while any of its nodes runs (its harness and each node process hold it), so a
prune never removes a seed a node may still link or one being linked.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.real_cluster.build import REPO
from harness.real_cluster.components import ControlPlaneError, log_tail
from harness.real_cluster.node_init import UNSHARE

BUILDER = REPO / "tools" / "images" / "build.py"
# The builder is a script of tools/, not a package: its names and cache, read from it.
_spec = importlib.util.spec_from_file_location("airflow_jax_image_builder", BUILDER)
assert _spec is not None and _spec.loader is not None
_builder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_builder)

CACHE: Path = _builder.CACHE
RUNTIME, AGENT, PAUSE = "jax-runtime", "in-place-restart-agent", "pause"
# Where the runtime image keeps the training code (the repository's CODE_DIRS): a test names a
# program by its path there.
CODE_ROOT = f"/{_builder.CODE_ROOT}/code"
CODE_DIRS: tuple[str, ...] = _builder.CODE_DIRS


def names() -> dict[str, str]:
    """Each image's name, as pods and containerd name it."""
    return _builder.image_names()


RUNTIME_IMAGE = names()[RUNTIME]
AGENT_IMAGE = names()[AGENT]
PAUSE_IMAGE = names()[PAUSE]


class SeedLease:
    """A shared ``flock`` of a seed's ``in-use.lock``, held while a node may link the seed:
    by the run that started the cluster until :meth:`release`, and by each node's process,
    which inherits :attr:`fd` (so a ``make cluster`` left up holds it after ``up`` ends)."""

    def __init__(self, seed: Path) -> None:
        self.fd: int | None = os.open(
            seed / "in-use.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644
        )
        fcntl.flock(self.fd, fcntl.LOCK_SH)

    def release(self) -> None:
        """The cluster is down: its seed may go once its nodes have ended too. Idempotent."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


@dataclass(frozen=True)
class Images:
    archives: dict[str, Path]  # image -> its OCI archive
    seed: Path | None  # a containerd root with them imported, or None: import on each node
    seeded: tuple[str, ...] = ()  # the archives (file names) imported into the seed
    lease: SeedLease | None = field(default=None, compare=False, repr=False)  # with a seed

    def to_import(self) -> list[Path]:
        """What a node imports itself: what its seed lacks (an edit of the training code)."""
        return [p for p in self.archives.values() if p.name not in self.seeded]

    def inherited(self) -> tuple[int, ...]:
        """The open files a node's process inherits: the seed's lease while it is held."""
        return () if self.lease is None or self.lease.fd is None else (self.lease.fd,)


def build() -> dict[str, Path]:
    """Build what is missing (a first build debootstraps Debian and installs JAX's wheels:
    minutes; later ones reuse the cached layers) and return each image's archive."""
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / "build.log"
    with log.open("ab") as out:
        done = subprocess.run(
            [sys.executable, str(BUILDER)], stdout=subprocess.PIPE, stderr=out, text=True
        )
    if done.returncode:
        raise ControlPlaneError(f"building the images failed; the end of {log}:\n{log_tail(log)}")
    archives = {}
    for line in done.stdout.split():
        _, image, archive = line.split("=", 2)
        archives[image] = Path(archive)
    return archives


def stable_layers(archive: Path) -> list[str]:
    """The layers of ``archive`` that no edit of the code changes (its ``.layers.json``)."""
    sidecar = archive.with_name(archive.name + ".layers.json")
    return json.loads(sidecar.read_text())["stable"] if sidecar.exists() else [archive.name]


def seed_key(archives: dict[str, Path]) -> str:
    """The stable layers' key: the seeds of every set of archives with the same stable layers
    (an edit of the training code changes only a code layer) start with it, and a new one
    starts from a link of the newest of them."""
    containerd = subprocess.run(
        ["containerd", "--version"], capture_output=True, text=True
    ).stdout.strip()
    parts = [containerd]
    for image, path in sorted(archives.items()):
        parts += [image, *stable_layers(path)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def same_filesystem(a: Path, b: Path) -> bool:
    a.mkdir(parents=True, exist_ok=True)
    b.mkdir(parents=True, exist_ok=True)
    return os.stat(a).st_dev == os.stat(b).st_dev


@contextlib.contextmanager
def _locked(path: Path, how: int) -> Iterator[int]:
    """``path`` (made if missing) open and ``flock``ed ``how``; closed (unlocked) after."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, how)
        yield fd
    finally:
        os.close(fd)


def seeded(archives: dict[str, Path], work: Path, containerd_config: str) -> Images:
    """``archives`` with their seed, made now if the cache has none. ``containerd_config``: a
    node's config template (``{root}`` filled in). No seed where nodes cannot link to it."""
    seeds = CACHE / "seeds"
    if not same_filesystem(seeds, work):
        return Images(archives, None)
    try:
        with _locked(seeds / ".lock", fcntl.LOCK_EX | fcntl.LOCK_NB):
            return _seeded(seeds, archives, containerd_config)
    except BlockingIOError:
        print(f"another run is making or pruning a seed ({seeds / '.lock'}): waiting for it",
              file=sys.stderr, flush=True)  # fmt: skip
    with _locked(seeds / ".lock", fcntl.LOCK_EX):
        return _seeded(seeds, archives, containerd_config)


def _seeded(seeds: Path, archives: dict[str, Path], containerd_config: str) -> Images:
    names = [p.name for p in archives.values()]
    stable = seed_key(archives)
    exact = hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:8]
    seed = seeds / f"{stable}-{exact}"
    if (seed / "root").exists():
        with contextlib.suppress(OSError):
            os.utime(seed)  # in use: the newest are kept
        return Images(archives, seed / "root", tuple(names), SeedLease(seed))
    bases = [d for d in seeds.glob(f"{stable}-*") if (d / "root").exists()]
    base = max(bases, key=lambda d: d.stat().st_mtime, default=None)
    had = json.loads((base / "imported.json").read_text()) if base else []
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=seeds))
    config = {
        "directory": str(partial),
        "containerd": shutil.which("containerd") or "containerd",
        "containerd_config": str(partial / "containerd.toml"),
        "containerd_root": str(partial / "root"),
        "archives": [str(p) for p in archives.values() if p.name not in had],
    }
    if base:
        config["seed"] = str(base / "root")
    (partial / "containerd.toml").write_text(containerd_config.format(root=partial / "root"))
    (partial / "seed.json").write_text(json.dumps(config))
    try:
        done = subprocess.run(
            [
                *UNSHARE,
                "--",
                sys.executable,
                "-m",
                "harness.real_cluster.node_init",
                "--seed",
                str(partial / "seed.json"),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=IMPORT_TIMEOUT_S,  # other runs wait on the lock meanwhile
        )
    except subprocess.TimeoutExpired:
        logs = "\n".join(log_tail(p) for p in (partial / "logs").glob("*.log"))
        shutil.rmtree(partial, ignore_errors=True)
        raise ControlPlaneError(
            f"importing the images into a seed took over {IMPORT_TIMEOUT_S} s: {logs}"
        ) from None
    if done.returncode:
        logs = "\n".join(log_tail(p) for p in (partial / "logs").glob("*.log"))
        shutil.rmtree(partial, ignore_errors=True)
        raise ControlPlaneError(f"importing the images failed: {done.stdout}{done.stderr}{logs}")
    seed.mkdir(parents=True, exist_ok=True)
    (seed / "imported.json").write_text(json.dumps(names))
    (partial / "root").rename(seed / "root")
    shutil.rmtree(partial, ignore_errors=True)
    lease = SeedLease(seed)
    prune_seeds(seeds)
    return Images(archives, seed / "root", tuple(names), lease)


SEEDS_KEPT = 3
# A seed's import: a minute or two from a base, about five without one on two busy cores.
IMPORT_TIMEOUT_S = 1200


def prune_seeds(seeds: Path) -> None:
    """Keep the newest seeds only (each a gigabyte or two, less where linked from another),
    and none a cluster still holds; and no partial one (a run killed while making it: seeds
    are made under the lock the caller holds). A node that linked an older one keeps its
    files: hard links outlive the seed's."""
    made = [d for d in seeds.iterdir() if d.is_dir() and not d.name.startswith(".")]
    for old in sorted(made, key=lambda d: d.stat().st_mtime, reverse=True)[SEEDS_KEPT:]:
        try:
            with _locked(old / "in-use.lock", fcntl.LOCK_EX | fcntl.LOCK_NB):
                # Out of sight first: a removal cut short leaves a partial one, never a seed
                # with files missing.
                old.rename(seeds / f".partial-{old.name}")
        except BlockingIOError:
            continue  # a cluster's nodes may still link it
    for partial in seeds.glob(".partial-*"):
        shutil.rmtree(partial, ignore_errors=True)
