"""The program every JAX process runs: initialize jax.distributed, call the user's function,
and leave a termination message that says how it ended.

The launcher's bootstrap calls :func:`main`. Process 0 (the leader) reports the return value;
every process that fails reports its traceback tail, so the operator can name the failing host.
"""

from __future__ import annotations

import atexit
import importlib
import json
import linecache
import os
import subprocess
import sys
import tempfile
import traceback
import types
from collections.abc import Callable
from typing import Any

from airflow_provider_jax import runtime
from airflow_provider_jax.runtime import data_paths, exits, jax_cluster, stores
from airflow_provider_jax.runtime.call import decode_call
from airflow_provider_jax.runtime.coordinator import wait_to_join
from airflow_provider_jax.runtime.debug_dump import DebugDump
from airflow_provider_jax.runtime.env import (
    COORDINATOR_ADDRESS_ENV,
    NUM_PROCESSES_ENV,
    PATHWAYS_ENV,
    PROCESS_ID_ENV,
    RESTART_STRATEGY_ENV,
)
from airflow_provider_jax.runtime.exits import (
    CODE_ERROR,
    EXIT_CODE_OF,
    HUNG,
    LOST_PEER,
    RESULT_ERROR,
    is_lost_peer,
)
from airflow_provider_jax.runtime.inflight_saves import finish_saves
from airflow_provider_jax.runtime.messages import (
    FAILURE_BEGIN,
    FAILURE_END,
    TERMINATION_MESSAGE_LIMIT,
    calling_line,
    failure_message,
    success_message,
    write_termination,
)
from airflow_provider_jax.runtime.output_paths import (
    DEBUG,
    PROFILES,
    RESULT_FILE,
    check_storage_path,
    result_uri,
    unreturnable_uri,
)
from airflow_provider_jax.runtime.profiling import Profiler, check_profile_steps
from airflow_provider_jax.runtime.program_call import call_as_written, set_argv
from airflow_provider_jax.runtime.watchdog import Watchdog

SOURCE_MODULE = "__airflow_jax_source__"
FAILED_FLUSH_TIMEOUT = 5.0  # s: a failed step's pending reports may never become ready
_succeeded = False  # the result is written and every process passed the shutdown barrier


def _end_once_done() -> None:
    """Registered before JAX or the user's code can register theirs, so it runs after every
    other exit handler (JAX's own clean-up, a logger's last upload). Once the job succeeded it
    ends the process there, skipping only the interpreter's final garbage collection: that is
    where XLA's CPU client is destroyed, and its destructor joins a thread pool that may still
    hold a collective no peer will ever join (a Gloo connection that waits out its own
    timeout: 150 s, seen once in some 40 runs of a 4-process job on two loaded cores). On GKE
    every chip of the slice would wait that long for nothing."""
    if _succeeded:
        exits.end(0)


def main() -> int:
    """Run the call the launcher put in the environment; 0 on success, else an exit code
    that classes the failure (``runtime.exits``): 42 when a peer was lost, 1 for a bug."""
    global _succeeded
    distributed = None
    atexit.register(_end_once_done)
    try:
        call = decode_call(os.environ)
        runtime.output_dir()  # refuses a path it could not write, before any work is done
        runtime._try_number = int(call.get("try_number") or 0)
        arm_diagnostics(call)  # before JAX is imported: XLA reads its dump flag once
        install_packages(call.get("pip_packages") or [])
        set_jax_config(call.get("jax_config") or {})  # before JAX makes its backends
        if os.environ.get(PATHWAYS_ENV):
            initialize_pathways()
        else:  # a bare jax.distributed.initialize() in the function works too
            jax_cluster.register_now()
            if call.get("initialize", True):
                distributed = initialize_distributed()
        set_argv(call)  # before the module is imported: some read sys.argv at import
        function = load_function(call)
        kwargs = data_paths.resolve(call.get("kwargs") or {})  # Data(...) -> local paths
        args = data_paths.resolve(call.get("args") or [])
        run_function = call_as_written(call, function, args, kwargs)
        runtime._total_steps = call.get("total_steps")
        watchdog = runtime._watchdog = watch_progress(call.get("progress_timeout"))
        if runtime.process_index() == 0:
            print(calling_line(getattr(function, "__qualname__", "the function")), flush=True)
        if runtime._profiler is not None:
            runtime._profiler.at_call()
        result = run_function()
        finish_saves()  # an async Orbax save still being written: finished, or the job fails
        runtime._reporter.flush()  # the last lines, and the last report for the leader's result
        if runtime._profiler is not None:
            runtime._profiler.close()  # its traces are out before the result says "done"
        if watchdog is not None:
            watchdog.stop()  # nothing is watched once the function has returned
        result_text = None  # written to output_dir once every process has returned
        if runtime.process_index() == 0:
            message, result_text = leader_message(
                result, runtime._last_report, runtime.output_dir(), runtime._resumed_step()
            )
        else:
            message = success_message()
        if runtime._debug_dump is not None:
            runtime._debug_dump.save()  # the HLO modules and the log tail of a success too
        if distributed is not None:
            distributed.shutdown()  # a barrier: every process returned
        where = runtime.output_dir()
        if result_text is not None and where is not None:  # not before: a failed run leaves none
            stores.write_text(result_uri(where), result_text)
    except BaseException as err:
        if runtime._watchdog is not None:
            runtime._watchdog.stop()  # one report: a hang it is reporting, or this error
        text = traceback.format_exc()
        runtime._reporter.flush(FAILED_FLUSH_TIMEOUT)  # what progress there was, if it comes
        sys.stderr.write(f"{FAILURE_BEGIN}\n{text}{FAILURE_END}\n")
        if isinstance(err, ResultNotReturnable):
            kind = RESULT_ERROR
        elif is_lost_peer(err):
            kind = LOST_PEER
        else:
            kind = CODE_ERROR
        code = EXIT_CODE_OF[kind]
        types = exception_types(err)
        write_termination(failure_message(_describe(err), text, kind, _dump_uri(), types))
        if runtime._profiler is not None:
            runtime._profiler.close(FAILED_FLUSH_TIMEOUT, stop=False)
        if runtime._debug_dump is not None:
            runtime._debug_dump.save(traceback_text=text)
        if "jax" not in sys.modules:
            return code
        # A normal exit would shut jax.distributed down, which waits for peers that may be
        # stuck in a collective with us, for minutes. The JobSet (or local backend) stops them.
        exits.end(code)
    write_termination(message)
    _succeeded = True
    return 0


def watch_progress(timeout: float | None) -> Watchdog | None:
    """The hung-host watchdog for ``progress_timeout`` seconds, armed by the first report."""
    if not timeout:
        return None

    def hung(stacks: str, idle: float) -> None:
        last = runtime._last_report
        where = f" (last report: {last})" if last else ""
        error = f"Hung: no progress report for {idle:.0f}s{where}"
        write_termination(failure_message(error, stacks, HUNG, _dump_uri()))
        if runtime._debug_dump is not None:
            runtime._debug_dump.save(stacks=stacks)

    return Watchdog(float(timeout), hung)


def arm_diagnostics(call: dict[str, Any]) -> None:
    """``profile_steps`` and ``debug_dump``: this host's profiler and debug dump, each in its
    own folder for this try, host and restart (so nothing overwrites another attempt's)."""
    if call.get("diagnostics_dir"):  # output_dir, or a local run's folder without one
        runtime._diagnostics_dir = check_storage_path("diagnostics_dir", call["diagnostics_dir"])
    if call.get("profile_steps") is not None:
        steps = check_profile_steps(call["profile_steps"])
        runtime._profiler = Profiler(runtime._host_folder(PROFILES), steps)
    if call.get("debug_dump"):
        runtime._debug_dump = DebugDump(runtime._host_folder(DEBUG))
        runtime._debug_dump.arm()


def set_jax_config(options: dict[str, Any]) -> None:
    """``jax_config=``: ``jax.config.update`` for each option, before anything else of JAX's
    runs (some, such as ``jax_compilation_cache_dir`` or ``jax_platforms``, are read once)."""
    if not options:
        return
    import jax

    for name, value in options.items():
        try:
            jax.config.update(name, value)
        except Exception as err:
            raise ValueError(f"jax_config[{name!r}] = {value!r}: JAX refused it: {err}") from err


def install_packages(packages: list[str]) -> None:
    """``pip install`` what the image lacks, into a directory searched *after* the image's
    site-packages, so the image's accelerator-matched JAX wins even over a dependency's."""
    if not packages:
        return
    target = tempfile.mkdtemp(prefix="airflow-jax-packages-")
    print(f"airflow-jax: pip install {' '.join(packages)}", flush=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # "--" ends pip's options: an entry is a requirement, never an option such as --index-url.
    done = subprocess.run(
        [*command, "--no-input", "--target", target, "--", *packages], check=False
    )
    if done.returncode:
        raise RuntimeError(
            f"pip install {packages} failed with exit code {done.returncode} (its output is "
            "above); the image needs pip and access to the package index."
        )
    sys.path.append(target)
    importlib.invalidate_caches()


def initialize_distributed() -> Any:
    """``jax.distributed.initialize`` with all three values explicit (JAX itself reads only the
    coordinator address from the environment), every process but the coordinator's first
    waiting for it to listen (``coordinator.py``)."""
    import jax

    address, process_id = os.environ[COORDINATOR_ADDRESS_ENV], int(os.environ[PROCESS_ID_ENV])
    if os.environ.get(RESTART_STRATEGY_ENV) == "in_place":
        # Every in-place restart stops the healthy pods' programs with SIGTERM. JAX's
        # preemption service would hold it for a sync point that a program stuck on its lost
        # peer never reaches, and the restart would wait out the whole grace period: SIGTERM
        # stops the program at once instead (the local tier holds a recent step).
        jax.config.update("jax_enable_preemption_service", False)
    timeout = wait_to_join(address, process_id)  # a worker: until the coordinator listens
    jax.distributed.initialize(
        coordinator_address=address,
        num_processes=int(os.environ[NUM_PROCESSES_ENV]),
        process_id=process_id,
        initialization_timeout=timeout,
    )
    jax.distributed.initialize = _joined_already(jax.distributed.initialize)
    return jax.distributed


def _joined_already(initialize: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.distributed.initialize`` once the runtime has joined: a program written to
    initialize itself (JAX's own examples are) then runs unchanged, where JAX would raise
    that it may be called only once, or first that its arguments are missing."""

    def initialize_once(*args: Any, **kwargs: Any) -> None:
        if jax_cluster.joined():
            print(
                "[airflow-jax] jax.distributed is initialized already (the runtime joins "
                "before calling the function): this jax.distributed.initialize() call does "
                "nothing.",
                file=sys.stderr,
                flush=True,
            )
            return
        initialize(*args, **kwargs)

    return initialize_once


def initialize_pathways() -> None:
    """The single controller reaches every chip through the IFRT proxy (``JAX_PLATFORMS`` is
    ``proxy``); ``pathwaysutils``, where the image has it, adds Pathways' checkpointing and
    profiling. The local backend's emulation runs on CPU devices and needs neither."""
    if os.environ.get("JAX_PLATFORMS") != "proxy":
        return
    try:
        import pathwaysutils
    except ImportError:
        return  # the proxy env alone is enough for JAX
    pathwaysutils.initialize()


def load_function(call: dict[str, Any]) -> Callable[..., Any]:
    """The function to call: ``"pkg.module:attr"``, or ``function`` from shipped ``source``."""
    if call.get("entrypoint"):
        what = f"entrypoint {call['entrypoint']!r}"
        module_name, _, attr = call["entrypoint"].partition(":")
        try:
            target: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if not err.name or not f"{module_name}.".startswith(f"{err.name}."):
                raise  # the module exists, one of its imports is missing
            raise ModuleNotFoundError(
                f"{what}: no module named {err.name!r}. It must be importable in every "
                "process: in the image on Kubernetes, next to the DAG file locally.",
                name=err.name,
            ) from None
        for part in attr.split("."):
            if not hasattr(target, part):
                raise AttributeError(f"{what}: {target!r} has no attribute {part!r}")
            target = getattr(target, part)
    else:
        where = (call.get("source_file"), call.get("source_line"))
        target = _exec_source(call["source"], *where).__dict__.get(call["function"])
        what = f"function {call['function']!r} of the shipped source"
        if target is None:
            raise NameError(f"the shipped source defines no {call['function']!r}")
    if not callable(target):
        raise TypeError(f"{what} is a {type(target).__name__}, not a function")
    return target


def _exec_source(source: str, path: str | None = None, def_line: int | None = None) -> Any:
    """Run shipped source as a real module, so dataclasses and tracebacks work as in a file.
    Where the DAG file and the line of the ``def`` are known, a traceback names them: the code
    is compiled under the file's path with its own line numbers, and linecache holds its lines
    there (the file itself is not in the pod)."""
    import ast

    filename = path or f"<{SOURCE_MODULE}>"
    tree = ast.parse(source, filename)
    shift = 0
    first = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None
    )
    if path and def_line and first is not None:
        shift = max(0, def_line - first.lineno)
        ast.increment_lineno(tree, shift)
    lines = ["\n"] * shift + source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(SOURCE_MODULE)
    module.__file__ = filename
    sys.modules[SOURCE_MODULE] = module
    exec(compile(tree, filename, "exec"), module.__dict__)
    return module


def leader_message(
    result: Any, report: Any, output_dir: str | None, resumed_from: int | None = None
) -> tuple[str, str | None]:
    """The leader's termination message, the result inline if it fits, else in
    ``<output_dir>/result.json``; and the JSON to write there, once every process has
    returned. The last report rides along when there is room. With an ``output_dir`` the
    result is always written there too: a job whose pods Airflow cannot reach (on a
    MultiKueue worker cluster) still returns it."""
    try:
        text = result_json(result)
    except ResultNotReturnable as err:
        raise ResultNotReturnable(str(err) + keep_unreturnable(result, output_dir)) from None
    to_write = text if output_dir else None
    for candidate in (report, None):
        try:
            return success_message(result, candidate, resumed_from=resumed_from), to_write
        except ValueError:
            pass
    if not output_dir:
        raise ResultNotReturnable(
            f"the result is {len(text.encode())} bytes of JSON, too big for the "
            f"{TERMINATION_MESSAGE_LIMIT}-byte termination message. Set output_dir on the "
            f"operator so it goes to <output_dir>/{RESULT_FILE}, or return less."
        )
    uri = result_uri(output_dir)
    for candidate in (report, None):
        try:
            message = success_message(result_uri=uri, report=candidate, resumed_from=resumed_from)
            return message, to_write
        except ValueError:
            pass
    raise ValueError(f"result URI {uri!r} does not fit in a termination message")


class ResultNotReturnable(TypeError, ValueError):
    """The function returned, but its value cannot come back to Airflow: a bug in the return
    statement, not in the training, so the task fails without a retry (which would train
    again for the same value)."""


def result_json(result: Any) -> str:
    """The result as JSON, or an error that names what is not JSON and how to return it."""
    try:
        return json.dumps(result, allow_nan=False, sort_keys=True, separators=(",", ":"))
    except TypeError as err:
        raise ResultNotReturnable(
            f"the function returned a {type(result).__module__}.{type(result).__qualname__} "
            f"that is not JSON-serializable ({err}). Results travel as JSON, never pickled: "
            "return dicts, lists, strings and numbers (e.g. float(loss), array.tolist())."
        ) from None
    except ValueError as err:
        raise ResultNotReturnable(
            f"the result contains NaN or infinity, which JSON cannot carry ({err}): return "
            "None in its place (float(x) if math.isfinite(x) else None), or str(x)."
        ) from None


def keep_unreturnable(result: Any, output_dir: str | None) -> str:
    """Write what can be kept of a result JSON cannot carry to ``output_dir`` (best effort),
    and say where, for the error."""
    if not output_dir:
        return " Nothing was kept: the task has no output_dir."
    uri = unreturnable_uri(output_dir)
    try:
        text = json.dumps(result, allow_nan=True, default=repr, sort_keys=True, indent=1)
        stores.write_text(uri, text)
    except Exception as err:
        return f" Keeping it in {uri} failed too: {err}."
    return f" The values are kept in {uri} (NaN as NaN, objects as their repr)."


def _dump_uri() -> str | None:
    """Where this host's debug dump goes, for its failure message (the task's error names
    it); None without ``debug_dump``."""
    return runtime._debug_dump.uri if runtime._debug_dump is not None else None


def exception_types(err: BaseException) -> list[str]:
    """The exception's class and its bases, nearest first: builtins by name, others dotted, so
    a ``DataServiceDown(ConnectionError)`` is known for what it is on the Airflow side."""
    return [
        cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
        for cls in type(err).__mro__
        if cls not in (object, BaseException)
    ]


def _describe(err: BaseException) -> str:
    """``Type: message``, with the notes added to it (PEP 678), which say what it interrupted.
    An error exit raised while an exception was handled (absl's ``app.run`` on a bad flag or a
    ``UsageError``, argparse's ``error()`` is direct) is described by that exception first:
    it is the cause, the exit only how the program ended."""
    context = err.__context__
    if isinstance(err, SystemExit) and context is not None and not err.__suppress_context__:
        return f"{_describe(context)} (then SystemExit: {err.code})"
    text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return " ".join([text, *getattr(err, "__notes__", ())])
