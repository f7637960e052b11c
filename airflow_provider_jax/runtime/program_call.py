"""How the runtime calls the user's function: with ``sys.argv`` as ``python <program>
<argv...>`` would set it, and, for a program written for absl, as ``absl.app.run`` calls its
``main``.

``absl.app.run(main)`` (absl/app.py) installs absl's log handler, parses the flags from argv
(printing usage and exiting 1 on a bad one), raises ``--verbosity`` from WARNING to INFO when
it was not given, runs the callbacks registered with ``call_after_init``, then calls
``sys.exit(main(argv))`` with what is left of argv *by position*, whatever the parameter is
called (Flax writes ``def main(_)``). The runtime calls ``app.run`` itself, with a ``main`` that
keeps the function's return value, so absl does all of that as absl does it, and the value
becomes the result rather than an exit code. Flax's ``__main__`` blocks also call
``jax.config.config_with_absl()`` first (JAX's flags become absl flags); an imported module's
``__main__`` block never runs, so the runtime does that too.

A program written for absl is one that imported ``absl.app``: nothing the runtime, JAX or
Orbax loads imports it (Orbax loads ``absl.logging`` and ``absl.flags``, never ``absl.app``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

ARGV_PARAMETER = "argv"  # what a non-absl function names the parameter that takes argv


def set_argv(call: dict[str, Any]) -> None:
    """``sys.argv`` as ``python <program> <argv...>`` sets it (``argv=``, or none): before the
    program's module is imported, since some read it at import."""
    program = call.get("entrypoint") or call.get("function") or "airflow-jax"
    sys.argv = [program.partition(":")[0], *(call.get("argv") or [])]


def is_absl_program() -> bool:
    """Whether the loaded program imported ``absl.app``: it was written for ``app.run``."""
    return "absl.app" in sys.modules


def call_as_written(
    call: dict[str, Any], function: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
) -> Callable[[], Any]:
    """A callable that runs ``function`` with the call's arguments as its program expects:
    through ``absl.app.run`` for an absl program, else directly, a parameter named ``argv``
    given ``sys.argv`` when ``argv=`` was."""
    if is_absl_program():
        return lambda: run_as_absl_main(function, args, kwargs)
    if call.get("argv") is not None and ARGV_PARAMETER not in kwargs and _names(function):
        kwargs = {**kwargs, ARGV_PARAMETER: list(sys.argv)}
    return lambda: function(*args, **kwargs)


def run_as_absl_main(function: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``absl.app.run`` over ``sys.argv``, calling ``function`` as its ``main``; its return
    value. absl's own exits (a usage error: 1) end the call as they end the program."""
    from absl import app

    jax = sys.modules.get("jax")
    if jax is not None and not getattr(jax.config, "use_absl", False):
        jax.config.config_with_absl()
    fills_argv = _first_positional_is_free(function, args, kwargs)
    returned: list[Any] = []

    def main(argv: list[str]) -> None:
        call_args = [argv, *args] if fills_argv else args
        returned.append(function(*call_args, **kwargs))

    try:
        app.run(main, argv=list(sys.argv))
    except SystemExit as ended:
        if ended.code not in (None, 0):
            raise
    return returned[0] if returned else None


def _names(function: Callable[..., Any]) -> bool:
    try:
        return ARGV_PARAMETER in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _first_positional_is_free(
    function: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
) -> bool:
    """Whether ``function``'s first positional parameter is left for argv, as ``app.run``
    fills it: nothing in ``args`` or ``kwargs`` gives it a value."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return not args and not kwargs
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional:
        return not args and positional[0].name not in kwargs
    return any(p.kind is p.VAR_POSITIONAL for p in parameters) and not args
