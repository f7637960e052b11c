"""Turn "call this Python function" into a command and env that run in any image with Python.

The stdlib-only runtime (``airflow_provider_jax.runtime``) travels inside the pod spec as a
zipped env value, so images need JAX but not this provider. The call itself is JSON; nothing
is ever pickled.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_provider_jax.arguments import is_template
from airflow_provider_jax.runtime.call import CALL_ENV, encode_call
from airflow_provider_jax.runtime.env import OUTPUT_DIR_ENV, REQUIRE_JOIN_ENV, TERMINATION_PATH_ENV
from airflow_provider_jax.runtime.messages import is_count

__all__ = [
    "CALL_ENV",
    "OUTPUT_DIR_ENV",
    "TERMINATION_PATH_ENV",
    "python_call",
    "runtime_bundle",
    "to_json",
]

RUNTIME_ENV = "AIRFLOW_JAX_RUNTIME"
# command= mode: runtime/jax_cluster.py's source, which the launcher writes as sitecustomize.py.
SITE_ENV = "AIRFLOW_JAX_SITE"
# "package.module:function": dotted Python identifiers on both sides of one colon.
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_ENTRYPOINT = re.compile(rf"^{_DOTTED}:{_DOTTED}$")

BOOTSTRAP = (
    "import base64,os,sys,tempfile\n"
    "p=os.path.join(tempfile.mkdtemp(prefix='airflow-jax-'),'runtime.zip')\n"
    f"open(p,'wb').write(base64.b64decode(os.environ['{RUNTIME_ENV}']))\n"
    "sys.path.insert(0,p)\n"
    "from airflow_provider_jax.runtime.main import main\n"
    "sys.exit(main())\n"
)


_BUNDLE_INIT = "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n"


@functools.cache
def runtime_bundle() -> str:
    """The runtime package, zipped and base64-encoded. Deterministic, so manifests are too.
    Every DAG file that builds a spec at parse needs it, so it is kept beside the runtime's
    bytecode, keyed by its files' sizes and times, as Python keeps bytecode: a parse then reads
    it instead of compressing the runtime again (where the folder is read-only, it does)."""
    package = Path(__file__).parents[1]  # airflow_provider_jax/, whose runtime/ is shipped
    files = sorted((package / "runtime").rglob("*.py"))
    stamp = hashlib.sha256()
    for path in files:
        status = path.stat()
        stamp.update(
            f"{path.relative_to(package)}:{status.st_size}:{status.st_mtime_ns}\n".encode()
        )
    cached = package / "runtime" / "__pycache__" / f"bundle-{stamp.hexdigest()[:16]}.b64"
    try:
        return cached.read_text()
    except OSError:
        pass
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        # Extend, not shadow: with the provider installed in the image, its other modules
        # (say, operators imported by a DAG-side entrypoint module) stay importable.
        zf.writestr(_member("airflow_provider_jax/__init__.py"), _BUNDLE_INIT)
        for path in files:
            zf.writestr(_member(path.relative_to(package.parent).as_posix()), path.read_bytes())
    bundle = base64.b64encode(buffer.getvalue()).decode()
    _keep(cached, bundle)
    for stale in cached.parent.glob("bundle-*.b64"):  # an older runtime's
        if stale != cached:
            stale.unlink(missing_ok=True)
    return bundle


def _keep(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a reader sees all of it or none), or not at all."""
    try:
        path.parent.mkdir(exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        os.replace(partial, path)
    except OSError:
        pass


@functools.cache
def site_source() -> str:
    """What a ``command=`` process gets of the provider: its JAX cluster environment, so a
    bare ``jax.distributed.initialize()`` works (``runtime/jax_cluster.py``)."""
    return (Path(__file__).parents[1] / "runtime" / "jax_cluster.py").read_text()


def command_env(require_distributed: bool) -> dict[str, str]:
    """The env a ``command=`` program gets beside the coordination values."""
    env = {SITE_ENV: site_source()}
    if require_distributed:
        env[REQUIRE_JOIN_ENV] = "1"
    return env


def _member(name: str) -> zipfile.ZipInfo:
    """A zip entry with a fixed date (deterministic) that is compressed: a ``ZipInfo`` keeps
    its own compression, stored by default, whatever the archive's is."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def to_json(value: Any, what: str) -> str:
    """JSON-encode ``value`` or raise a ValueError that names ``what`` and the bad type."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{what} must be JSON-serializable (results and arguments travel as JSON, never "
            f"pickled): {err}. Give NaN or infinity as None or a string, and an object as "
            "the plain values it is made of."
        ) from None


def python_call(
    *,
    entrypoint: str | None = None,
    source: str | None = None,
    function: str | None = None,
    kwargs: dict[str, Any] | None = None,
    args: list[Any] | None = None,
    output_dir: str | None = None,
    initialize: bool = True,
    pip_packages: list[str] | None = None,
    python: str = "python3",
    progress_timeout: float | None = None,
    total_steps: int | str | None = None,
    argv: list[str] | str | None = None,
    diagnostics: dict[str, Any] | None = None,
    source_file: str | None = None,
    source_line: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Command and env that run ``entrypoint`` (``"pkg.module:function"``) or ``function``
    from shipped ``source`` in every process, after ``jax.distributed.initialize()``.
    ``options``: further task arguments for the runtime, each under its own name (JSON)."""
    if (entrypoint is None) == (source is None):
        raise ValueError("give exactly one of entrypoint or source")
    if entrypoint is not None:
        check_entrypoint(entrypoint)
    check_python(python)
    kwargs = kwargs or {}
    named = "entrypoint_kwargs" if entrypoint is not None else "the function's arguments"
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ValueError(f"{named} must be a dict with string keys, got {kwargs!r}")
    for key, value in kwargs.items():
        where = f"entrypoint_kwargs[{key!r}]" if entrypoint is not None else f"argument {key!r}"
        to_json(value, where)
    for i, value in enumerate(args or ()):
        to_json(value, f"positional argument {i}")
    call: dict[str, Any] = {
        "entrypoint": entrypoint,
        "source": source,
        "function": function,
        "kwargs": kwargs,
        "initialize": initialize,
        "pip_packages": list(pip_packages or []),
    }
    if source_file and source_line:  # a decorated function's DAG file, for its tracebacks
        call["source_file"], call["source_line"] = source_file, source_line
    if args:  # only a decorated function's positional-only or *args parameters
        call["args"] = list(args)
    if argv is not None and not is_template(argv):
        call["argv"] = list(argv)
    if progress_timeout:
        call["progress_timeout"] = progress_timeout
    if (total := step_count(total_steps)) is not None:
        call["total_steps"] = total
    call.update(diagnostics or {})  # try_number, profile_steps, debug_dump and their folder
    for name, value in (options or {}).items():
        if value is not None and not is_template(value):
            call[name] = json.loads(to_json(value, name))
    env = {RUNTIME_ENV: runtime_bundle(), **encode_call(call)}
    if output_dir:
        env[OUTPUT_DIR_ENV] = output_dir
    return [python, "-c", BOOTSTRAP], env


def check_entrypoint(entrypoint: object) -> None:
    """``package.module:function`` in Python identifiers, or a template (checked once
    rendered, whether the whole value or a part of it is Jinja)."""
    if is_template(entrypoint):
        return
    if not isinstance(entrypoint, str) or not _ENTRYPOINT.fullmatch(entrypoint):
        raise ValueError(
            "entrypoint must look like 'package.module:function' (Python identifiers, dotted, "
            f"and one ':'), got {entrypoint!r}."
        )


def check_python(python: object) -> None:
    """``python`` is the one executable every process starts (a name on the PATH, or a path)."""
    if not isinstance(python, str) or not python.strip() or any(c.isspace() for c in python):
        raise ValueError(
            "python must be one executable, a name on the image's PATH or a path, without "
            f"spaces or arguments (e.g. 'python3' or '/opt/venv/bin/python'), got {python!r}."
        )
    if "\0" in python:
        raise ValueError(f"python {python!r} holds a NUL byte, which no process can be given.")


def step_count(value: Any) -> int | None:
    """A positive step count, from an int or (rendered without native types) its digits; a
    Jinja template not rendered yet is checked once it is."""
    if value is None or (isinstance(value, str) and "{" in value):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not is_count(value) or value < 1:
        raise ValueError(f"total_steps must be a positive integer, got {value!r}")
    return value


# The image's JAX is built for its accelerator (libtpu, CUDA); a pip install must never shadow it.
ACCELERATOR_MATCHED = frozenset({"jax", "jaxlib", "libtpu", "libtpu-nightly"})


def split_pip_packages(packages: list[str]) -> tuple[list[str], list[str]]:
    """``(kept, dropped)``: requirements to install at process start, and the accelerator-
    matched ones (jax, jaxlib, libtpu, jax[...] and friends) left to the image."""
    if not packages:  # most tasks: no packaging import at DAG parse
        return [], []
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    kept: list[str] = []
    dropped: list[str] = []
    for i, spec in enumerate(packages):
        if not isinstance(spec, str):
            raise ValueError(f"pip_packages entries must be strings, got {spec!r}")
        try:
            name = canonicalize_name(Requirement(spec).name)
        except InvalidRequirement:
            # pip would take "--index-url=..." or "-r file" as an option: only requirements go.
            raise ValueError(
                f"pip_packages[{i}] {spec!r} is not a requirement specifier (PEP 508, e.g. "
                "'optax>=0.2' or 'pkg @ https://host/pkg.whl'); pip options are not passed. To "
                "install from another index, set PIP_INDEX_URL or PIP_EXTRA_INDEX_URL in env, "
                "or through secrets= when the URL holds a credential."
            ) from None
        (dropped if name in ACCELERATOR_MATCHED or name.startswith("jax-cuda") else kept).append(
            spec
        )
    return kept, dropped
