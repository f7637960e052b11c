"""Build the test cluster's container images offline, as OCI archives that a node's containerd
imports (``ctr -n k8s.io images import``): no registry is reachable, so nothing is pulled.

- ``pause``: the pod sandbox, the static ``pause`` that ``tools/control-plane/build.sh``
  compiles from the Kubernetes module's C source.
- ``in-place-restart-agent``: JobSet's agent, built by ``build.sh`` from the pinned module.
- ``jax-runtime``: a Debian root filesystem (``mmdebstrap``, Debian's ``python3``), JAX and
  what the training code imports, installed from wheels pinned by ``requirements/
  constraints.txt`` (the project's lock) into a layer without running the image, and the
  pod-side runtime (``airflow_provider_jax/runtime``) with the training code the tests and
  the example DAGs run (``CODE_DIRS``), all byte-compiled.

Each layer is cached in the per-user cache (``~/.cache/airflow-provider-jax/images``), keyed by
what makes it: the Debian layer by the suite and its packages, the wheels by their lock lines,
the code by its files. An archive is rebuilt from cached layers when one of them changes.

    python tools/images/build.py [NAME...]   build what is missing; print NAME=ARCHIVE each
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTROL_PLANE = ROOT / "tools" / "control-plane"
CACHE = Path(
    os.environ.get(
        "AIRFLOW_JAX_IMAGE_CACHE",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "airflow-provider-jax"
        / "images",
    )
)
REPOSITORY = "localhost/airflow-provider-jax"
EPOCH = 1_700_000_000  # every file's time in the layers we write: the same input, the same digest
DEBIAN_PACKAGES = ("python3",)
# The distributions the training code imports; their dependencies come with them, every one at
# the lock's version. ``kubernetes``: what JAX's own Kubernetes route (``K8sCluster``, the
# ``jax[k8s]`` extra) imports, which a test takes beside the provider's.
WHEELS = ("jax", "jaxlib", "numpy", "orbax-checkpoint", "optax", "kubernetes")
PYTHON = "3.11"  # bookworm's python3, and the lock's
SITE = f"usr/local/lib/python{PYTHON}/dist-packages"
CODE_ROOT = "opt/airflow-jax"
# The training code the tests, the benches and the example DAGs run, at <CODE_ROOT>/code/<its
# path here>: each folder's modules (on the image's PYTHONPATH, but for the programs a test
# names by path), and the packages entrypoints name (``tests.support.programs:...``).
CODE_DIRS = ("dags", "tests/real_cluster/dags", "tests/fixtures/programs", "bench/pods")
CODE_PACKAGES = (
    "tests/__init__.py", "tests/support/__init__.py", "tests/support/programs.py",
    "bench/__init__.py",
)  # fmt: skip
CODE_PATH = [f"/{CODE_ROOT}/code/{d}" for d in CODE_DIRS if d != "tests/fixtures/programs"]
CODE_PATH.append(f"/{CODE_ROOT}/code")
RUNTIME_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    # The runtime package and the training code; the nodes' chips are JAX CPU devices.
    "PYTHONPATH": ":".join([f"/{CODE_ROOT}/lib", *CODE_PATH]),
    "JAX_PLATFORMS": "cpu",
}
_BUNDLE_INIT = "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n"


def log(message: str) -> None:
    print(f"[images] {message}", file=sys.stderr, flush=True)


def versions() -> dict[str, str]:
    pairs = (
        line.split("=", 1) for line in (CONTROL_PLANE / "versions.env").read_text().split("\n")
    )
    return {k.strip(): v.strip() for k, v in (p for p in pairs if len(p) == 2) if k[:1] != "#"}


def binaries() -> dict[str, Path]:
    out = subprocess.run(
        ["bash", str(CONTROL_PLANE / "build.sh"), "--where"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {name: Path(path) for name, _, path in (line.partition("=") for line in out.split())}


def layer_digest(layer: Path) -> str:
    """A cached layer's sha256, kept beside it (a layer is a gigabyte: hashing it on every
    start would cost seconds)."""
    kept = layer.with_name(layer.name + ".sha256")
    if kept.exists() and kept.stat().st_mtime >= layer.stat().st_mtime:
        return kept.read_text().strip()
    digest = digest_of(layer)
    kept.write_text(digest)
    return digest


def digest_of(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def key(*parts: str | bytes) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part if isinstance(part, bytes) else part.encode())
        sha.update(b"\0")
    return sha.hexdigest()[:16]


# -- layers ---------------------------------------------------------------------------------


def _info(
    name: str, size: int = 0, mode: int = 0o644, kind: bytes = tarfile.REGTYPE
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.type, info.mtime = size, mode, kind, EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def tree_layer(out: Path, tree: Path) -> Path:
    """A layer of everything under ``tree`` (paths relative to the image root), in a fixed
    order with fixed owners and times, so the same files make the same digest."""
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(tree.rglob("*")):
            name = path.relative_to(tree).as_posix()
            if path.is_symlink():
                info = _info(name, kind=tarfile.SYMTYPE)
                info.linkname = os.readlink(path)
                tar.addfile(info)
            elif path.is_dir():
                tar.addfile(_info(name, mode=0o755, kind=tarfile.DIRTYPE))
            else:
                mode = 0o755 if os.access(path, os.X_OK) else 0o644
                with path.open("rb") as f:
                    tar.addfile(_info(name, path.stat().st_size, mode), f)
    partial.replace(out)
    return out


def binary_layer(stem: str, files: dict[str, Path]) -> Path:
    """A cached layer of ``files`` (image path -> a built binary here), keyed by their bytes."""
    out = CACHE / "layers" / f"{stem}-{key(*(f'{n}:{digest_of(p)}' for n, p in files.items()))}.tar"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        for name, source in files.items():
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        return tree_layer(out, Path(tmp))


def debian_layer(suite: str) -> Path:
    """Debian's minimal base with ``DEBIAN_PACKAGES``, from Debian's mirror (mmdebstrap).
    Root's own: mmdebstrap runs the packages' scripts in a chroot."""
    mirror = debian_mirror()
    out = CACHE / "layers" / f"debian-{suite}-{key(suite, *DEBIAN_PACKAGES, mirror)}.tar"
    if out.exists():
        return out
    if shutil.which("mmdebstrap") is None:
        sys.exit("building the images needs mmdebstrap (apt-get install mmdebstrap)")
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f"debootstrapping Debian {suite} with {', '.join(DEBIAN_PACKAGES)} (mmdebstrap)")
    partial = out.with_name(f".partial-{out.name}")  # .tar: mmdebstrap writes a tarball
    subprocess.run(
        [
            "nice",
            "-n",
            "10",
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            # No apt lists or caches in the image; pods never run apt.
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
            suite,
            str(partial),
            mirror,
        ],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": str(EPOCH), "TMPDIR": str(out.parent)},
    )
    partial.replace(out)
    return out


def debian_mirror() -> str:
    """The mirror this machine's apt uses (Debian's own unless configured otherwise)."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists() and (
        m := re.search(r"^URIs:\s*(\S+/debian)\s*$", sources.read_text(), re.M)
    ):
        return m.group(1)
    return "http://deb.debian.org/debian"


def lock_lines() -> list[str]:
    """The lock's pins (``requirements/constraints.txt``), as requirement lines: the wheels
    layer is keyed by all of them (what the wheels resolve to is known only once resolved)."""
    return [
        line.strip()
        for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.startswith((" ", "#"))
    ]


def wheels_layer() -> Path:
    """JAX and what the training code imports, from the lock's wheels: resolved and installed
    by uv for the image's Python and platform into a folder, never run, then byte-compiled
    (unchecked hashes: valid whatever the files' times)."""
    pins = lock_lines()
    out = CACHE / "layers" / f"wheels-{key(PYTHON, *WHEELS, *pins)}.tar"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f"installing {', '.join(WHEELS)} from the lock's wheels for Python {PYTHON}")
    uv = Path(sys.executable).with_name("uv")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        target = Path(tmp) / SITE
        subprocess.run(
            [
                str(uv if uv.exists() else "uv"),
                "pip",
                "install",
                "--quiet",
                "--target",
                str(target),
                "--python-version",
                PYTHON,
                "--python-platform",
                "x86_64-manylinux_2_36",
                "--only-binary",
                ":all:",
                "-c",
                str(ROOT / "requirements" / "constraints.txt"),
                *WHEELS,
            ],
            check=True,
        )
        shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts of the host's
        compile_tree(target)
        return tree_layer(out, Path(tmp))


def compile_tree(folder: Path) -> None:
    subprocess.run(
        [
            "nice",
            "-n",
            "10",
            f"python{PYTHON}",
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            str(folder),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def code_layer() -> Path:
    """The pod-side runtime and the training code, byte-compiled."""
    files: dict[str, Path] = {}
    runtime = ROOT / "airflow_provider_jax" / "runtime"
    for path in sorted(runtime.rglob("*.py")):
        files[f"{CODE_ROOT}/lib/{path.relative_to(ROOT).as_posix()}"] = path
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).glob("*.py")):
            files[f"{CODE_ROOT}/code/{folder}/{path.name}"] = path
    for name in CODE_PACKAGES:
        files[f"{CODE_ROOT}/code/{name}"] = ROOT / name
    stamp = key(*(f"{name}:{digest_of(path)}" for name, path in files.items()))
    out = CACHE / "layers" / f"code-{stamp}.tar"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        for name, source in files.items():
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        (Path(tmp) / CODE_ROOT / "lib" / "airflow_provider_jax" / "__init__.py").write_text(
            _BUNDLE_INIT
        )
        compile_tree(Path(tmp))
        tree_layer(out, Path(tmp))
    prune((CACHE / "layers").glob("code-*.tar"), KEEP)
    return out


# -- images ---------------------------------------------------------------------------------


def oci_archive(
    name: str, layers: list[Path], config: dict, out_dir: Path, volatile: int = 0
) -> Path:
    """An OCI image layout in one tar (what ``ctr images import`` reads), named ``name``
    (``io.containerd.image.name``); its file is keyed by the manifest's digest. Beside it,
    ``<archive>.layers.json``: its layers' digests, and which of them (the last ``volatile``)
    change with any edit of the code, so a node's containerd seeded with the others only
    imports those (harness/real_cluster/images.py)."""
    diff_ids = [f"sha256:{layer_digest(layer)}" for layer in layers]
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }
    config_blob = json.dumps(image_config, sort_keys=True).encode()
    config_digest = hashlib.sha256(config_blob).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": f"sha256:{config_digest}",
            "size": len(config_blob),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": d,
                "size": layer.stat().st_size,
            }
            for d, layer in zip(diff_ids, layers, strict=True)
        ],
    }
    manifest_blob = json.dumps(manifest, sort_keys=True).encode()
    manifest_digest = hashlib.sha256(manifest_blob).hexdigest()
    out = out_dir / f"{name.rsplit('/', 1)[-1].replace(':', '-')}-{manifest_digest[:16]}.tar"
    sidecar = out.with_name(out.name + ".layers.json")
    if out.exists() and sidecar.exists():
        return out
    stable = diff_ids[: len(diff_ids) - volatile]
    out_dir.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps({"layers": diff_ids, "stable": stable}))
    if out.exists():
        return out
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": manifest["mediaType"],
                "digest": f"sha256:{manifest_digest}",
                "size": len(manifest_blob),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
                },
            }
        ],
    }
    partial = out.with_name(out.name + ".partial")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:

        def add_bytes(path: str, data: bytes) -> None:
            tar.addfile(_info(path, len(data)), io.BytesIO(data))

        add_bytes("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_bytes("index.json", json.dumps(index, sort_keys=True).encode())
        tar.addfile(_info("blobs", mode=0o755, kind=tarfile.DIRTYPE))
        tar.addfile(_info("blobs/sha256", mode=0o755, kind=tarfile.DIRTYPE))
        add_bytes(f"blobs/sha256/{config_digest}", config_blob)
        add_bytes(f"blobs/sha256/{manifest_digest}", manifest_blob)
        for digest, layer in zip(diff_ids, layers, strict=True):
            with layer.open("rb") as f:
                tar.addfile(_info(f"blobs/sha256/{digest.split(':')[1]}", layer.stat().st_size), f)
    partial.replace(out)
    prune(out_dir.glob(f"{name.rsplit('/', 1)[-1].replace(':', '-')}-*.tar"), KEEP)
    return out


KEEP = 3  # archives of an image, and code layers, kept in the cache (the newest)


def prune(paths: Iterable[Path], keep: int) -> None:
    """Remove all but the ``keep`` newest of ``paths`` (and their sidecars): every edit of
    the training code makes a new code layer and runtime archive."""
    for old in sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)[keep:]:
        for path in (old, *old.parent.glob(f"{old.name}.*")):
            path.unlink(missing_ok=True)


def image_names() -> dict[str, str]:
    """Each image's name, as pods and containerd's config name it."""
    v = versions()
    return {
        "pause": f"{REPOSITORY}/pause:{v['KUBERNETES_VERSION']}",
        "in-place-restart-agent": f"{REPOSITORY}/in-place-restart-agent:{v['JOBSET_VERSION']}",
        "jax-runtime": f"{REPOSITORY}/jax-runtime:{PYTHON}-jax{_pin('jax')}",
    }


def _pin(name: str) -> str:
    for line in lock_lines():
        if line.lower().startswith(f"{name}=="):
            return line.split("==", 1)[1]
    raise SystemExit(f"{name} is not in requirements/constraints.txt")


def build(name: str) -> Path:
    names, out_dir = image_names(), CACHE / "archives"
    if name in ("pause", "in-place-restart-agent"):  # one static binary, its entrypoint
        layer = binary_layer(name, {name: binaries()[name]})
        return oci_archive(names[name], [layer], {"Entrypoint": [f"/{name}"]}, out_dir)
    if name == "jax-runtime":
        layers = [debian_layer(versions()["DEBIAN_SUITE"]), wheels_layer(), code_layer()]
        config = {"Env": [f"{k}={v}" for k, v in RUNTIME_ENV.items()], "Cmd": ["python3"]}
        return oci_archive(names[name], layers, config, out_dir, volatile=1)  # the code
    raise SystemExit(f"unknown image {name!r}; known: {', '.join(names)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(image_names()))
    args = parser.parse_args(argv)
    CACHE.mkdir(parents=True, exist_ok=True)
    names = image_names()
    for name in args.names:
        archive = build(name)
        print(f"{name}={names[name]}={archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
