"""A bare ``jax.distributed.initialize()`` in every process of a JobSet, as JAX's own examples
write it, on either backend.

Without arguments JAX reads only ``JAX_COORDINATOR_ADDRESS`` from the environment; the process
count and id come from a cluster environment it detects (a Cloud TPU VM, GKE's TPU pods,
Slurm, Open MPI, or Kubernetes through ``K8sCluster``, which asks the API server about its own
pod and Job). Local processes match none of these, a GPU pod matches ``K8sCluster`` only with
the ``kubernetes`` package and a service account that may read pods and Jobs, and
``K8sCluster`` counts one Job's pods, not a multislice JobSet's. So the provider registers a
cluster environment of its own with JAX (``ClusterEnv`` subclasses register themselves) that
reads the values the JobSet already gives every process, and puts it first: the values are
the same ones GKE's TPU environment would give, and right for every shape.

The runtime registers it before the entrypoint's code runs. In ``command=`` mode the program
is the user's own, so the launcher writes this very file as ``sitecustomize.py`` into a folder
of its own on ``PYTHONPATH`` (Python imports it at start, as OpenTelemetry's auto-instrumentation
does): when, and only when, the program imports JAX, the environment is registered; an image's
own ``sitecustomize`` still runs after it. At exit, a process of a multi-host job that
imported JAX, never called ``jax.distributed.initialize()`` and ended well says so: it ran
alone, on its own devices. Exit handlers run last-registered first, so by then JAX's own
(``jax._src.api.clean_up``) or the program's ``jax.distributed.shutdown()`` has dropped the
client: what joining leaves behind is the coordinator address JAX keeps. A process that
ended badly (an unhandled exception, ``sys.exit`` with an error) crashed; its traceback and
exit code say so, and no word about joining is added.

This file is self-contained (stdlib only, no import of the provider), since in ``command=``
mode it is all of the provider a process gets.
"""

from __future__ import annotations

import os
import sys
from typing import Any

# The values every process of a JobSet gets (runtime/env.py re-exports them).
COORDINATOR_ADDRESS_ENV = "JAX_COORDINATOR_ADDRESS"
NUM_PROCESSES_ENV = "JAX_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_PROCESS_ID"
# "1": a process that imported JAX and exits without joining jax.distributed fails.
REQUIRE_JOIN_ENV = "AIRFLOW_JAX_REQUIRE_DISTRIBUTED"
NOT_JOINED_EXIT = 3  # its exit code then
NOT_JOINED_MARK = "[airflow-jax] not joined:"  # the line's start, which the task log shows

NAME = "airflow_jax"  # what cluster_detection_method= would name it
CLUSTERS_MODULE = "jax._src.clusters"  # where JAX keeps its ClusterEnv subclasses
_WANTED = (COORDINATOR_ADDRESS_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV)


def present(environ: Any = os.environ) -> bool:
    """Whether this process was started by the provider's launcher, with all three values."""
    return all(environ.get(name) for name in _WANTED)


def register(clusters: Any) -> type | None:
    """Define the provider's ``ClusterEnv`` in JAX's ``clusters`` module and put it first.
    Returns it, or None where this JAX keeps no such registry (nothing then changes)."""
    base = getattr(clusters, "ClusterEnv", None)
    registry = getattr(base, "_cluster_types", None)
    if base is None or not isinstance(registry, list):
        return None
    for known in registry:
        if getattr(known, "name", None) == NAME:
            return known  # registered already (the runtime, then the user's import)

    class AirflowJaxCluster(base):  # type: ignore[misc, valid-type]
        """The JobSet's own coordination values: see the module's docstring."""

        name = NAME
        opt_in_only_method = False

        @classmethod
        def is_env_present(cls) -> bool:
            return present()

        @classmethod
        def get_coordinator_address(
            cls, timeout_secs: int | None = None, override_coordinator_port: str | None = None
        ) -> str:
            return os.environ[COORDINATOR_ADDRESS_ENV]

        @classmethod
        def get_process_count(cls) -> int:
            return int(os.environ[NUM_PROCESSES_ENV])

        @classmethod
        def get_process_id(cls) -> int:
            return int(os.environ[PROCESS_ID_ENV])

        @classmethod
        def get_local_process_id(cls) -> int | None:
            return None  # one process per host: every local device is its own

    registry.remove(AirflowJaxCluster)  # appended by ClusterEnv.__init_subclass__
    registry.insert(0, AirflowJaxCluster)
    return AirflowJaxCluster


def register_now() -> type | None:
    """Register it in this process (the runtime, which imports JAX anyway)."""
    import importlib

    return register(importlib.import_module(CLUSTERS_MODULE))


class _AfterImport:
    """A ``sys.meta_path`` finder that lets JAX's clusters module load as usual, then
    registers the provider's environment in it, once. Nothing is imported before the program
    imports JAX itself."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != CLUSTERS_MODULE:
            return None
        import importlib.util

        sys.meta_path.remove(self)  # done after this one: and the others find the real spec
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            register(module)

        loader.exec_module = exec_then_register
        return spec


def register_on_import() -> None:
    """Register the environment when the program imports JAX (``sitecustomize``)."""
    if not present():
        return
    if CLUSTERS_MODULE in sys.modules:
        register(sys.modules[CLUSTERS_MODULE])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def joined() -> bool | None:
    """Whether this process called ``jax.distributed.initialize()``; None if it never imported
    JAX. Still true after ``shutdown()``: JAX keeps the coordinator address it joined."""
    distributed = sys.modules.get("jax._src.distributed")
    if distributed is None:
        return None
    state = getattr(distributed, "global_state", None)
    return getattr(state, "coordinator_address", None) is not None or (
        getattr(state, "client", None) is not None
    )


_ended_badly: list[bool] = []  # set by the hooks below: an unhandled exception, sys.exit(error)


def watch_how_it_ends() -> None:
    """Note an unhandled exception (``sys.excepthook``) and an error exit (``sys.exit`` with a
    code other than 0 or None, as argparse and absl end), for :func:`check_joined`. A bare
    ``raise SystemExit(1)`` is not seen: the process is then told it never joined."""
    excepthook, exit_ = sys.excepthook, sys.exit

    def noting_excepthook(kind: Any, value: Any, tb: Any) -> None:
        _ended_badly.append(True)
        excepthook(kind, value, tb)

    def noting_exit(code: Any = None) -> Any:
        if code not in (0, None):
            _ended_badly.append(True)
        return exit_(code)

    sys.excepthook, sys.exit = noting_excepthook, noting_exit


def check_joined() -> None:
    """At exit: a process of a multi-host job that imported JAX, never joined, and ended well
    says so on stderr (``NOT_JOINED_MARK``), and fails where the job requires joining."""
    try:
        count = int(os.environ.get(NUM_PROCESSES_ENV) or 1)
    except ValueError:
        return
    if count < 2 or _ended_badly or joined() is not False:
        return
    process = os.environ.get(PROCESS_ID_ENV, "?")
    sys.stderr.write(
        f"{NOT_JOINED_MARK} process {process} of {count} imported JAX but never called "
        "jax.distributed.initialize(), so it ran alone on its own devices, not as one of "
        f"{count} processes. Call jax.distributed.initialize() (no arguments are needed here) "
        "before any other JAX call.\n"
    )
    sys.stderr.flush()
    if os.environ.get(REQUIRE_JOIN_ENV) == "1":
        sys.stdout.flush()
        os._exit(NOT_JOINED_EXIT)


def _chain_image_sitecustomize() -> None:
    """Run the image's own ``sitecustomize``, which this one shadows on ``sys.path``."""
    import importlib

    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        importlib.import_module("sitecustomize")
    except ModuleNotFoundError as err:
        if err.name != "sitecustomize":
            raise
    finally:
        sys.path[:] = saved
        if mine is not None:
            sys.modules.setdefault("sitecustomize", mine)


if __name__ == "sitecustomize":  # written by the launcher in command= mode
    import atexit

    register_on_import()
    watch_how_it_ends()
    atexit.register(check_joined)
    _chain_image_sitecustomize()
