"""What both JAX decorators share: ship the function's source and its JSON arguments to
every process, where the runtime calls it after ``jax.distributed.initialize()``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from airflow.sdk.bases.decorator import DecoratedOperator

from airflow_provider_jax.manifest.data_inputs import encode
from airflow_provider_jax.manifest.pod_command import to_json
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.job_spec import JobRequest, runtime_call
from airflow_provider_jax.runtime.program_call import ARGV_PARAMETER

if TYPE_CHECKING:
    from airflow.sdk.bases.decorator import TaskDecorator

# Context values a function may ask for by name; they travel as JSON like any argument.
CONTEXT_KEYS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "ds": lambda c: c["ds"],
    "ds_nodash": lambda c: c["ds_nodash"],
    "ts": lambda c: c["ts"],
    "run_id": lambda c: c["run_id"],
    "params": lambda c: dict(c["params"]),
    "logical_date": lambda c: c["logical_date"] and c["logical_date"].isoformat(),
    "data_interval_start": lambda c: (
        c["data_interval_start"] and c["data_interval_start"].isoformat()
    ),
    "data_interval_end": lambda c: c["data_interval_end"] and c["data_interval_end"].isoformat(),
    "map_index": lambda c: c["ti"].map_index,
    "try_number": lambda c: c["ti"].try_number,
}


# What the operators take to name the program; a decorated function is the program.
SOURCE_ARGUMENTS = frozenset({"entrypoint", "entrypoint_kwargs", "command"})


class JaxDecoratedMixin(DecoratedOperator):
    """Turns a decorated function into the ``source`` form of the runtime's call."""

    template_fields: Sequence[str] = tuple(
        sorted(
            {"op_args", "op_kwargs", *JaxJobOperator.template_fields}
            - {"command", "entrypoint", "entrypoint_kwargs"}
        )
    )
    shallow_copy_attrs: Sequence[str] = ("python_callable",)
    ships_source: ClassVar[bool] = True

    def __init__(self, **kwargs: Any) -> None:
        if given := sorted(SOURCE_ARGUMENTS.intersection(kwargs)):
            raise ValueError(
                f"{kwargs.get('task_id', 'the task')}: {', '.join(given)} do not go with a "
                "decorated function, which is itself what every process runs (its arguments "
                "are the call's). Use the operator for an entrypoint or a command."
            )
        self._context: Mapping[str, Any] | None = None
        takes_argv = _leaves_argv_to_the_runtime(kwargs)
        if takes_argv:  # Airflow binds the call at parse: argv's value comes at run time
            kwargs["op_kwargs"] = {**(kwargs.get("op_kwargs") or {}), ARGV_PARAMETER: []}
        super().__init__(**kwargs)
        if takes_argv:
            self.op_kwargs = {k: v for k, v in self.op_kwargs.items() if k != ARGV_PARAMETER}

    def build_manifest(self, context: Any) -> dict[str, Any]:
        # The context keys the function asks for are part of its call, and so of the manifest
        # (built for the rendered view first, then again by execute()).
        self._context = context
        return JaxJobOperator.build_manifest(cast(JaxJobOperator, self), context)

    def _program(self, request: JobRequest, jobset: str) -> tuple[list[str], dict[str, str]]:
        args, kwargs = self._call(request.rendered)
        return runtime_call(
            request,
            jobset,
            source=self.get_python_source(),
            function=self.python_callable.__name__,
            args=args,
            kwargs=kwargs,
            **source_location(self.python_callable),
        )

    def _call_arguments(self, rendered: bool) -> Mapping[str, Any]:
        """Every value the function gets, positional ones under ``*<index>``."""
        args, kwargs = self._call(rendered)
        return {**{f"*{i}": value for i, value in enumerate(args)}, **kwargs}

    def _call(self, rendered: bool) -> tuple[list[Any], dict[str, Any]]:
        """op_args/op_kwargs bound as Python binds them (so ``*args``, ``**kwargs`` and
        positional-only parameters get exactly what a direct call would give them), and the
        context keys the function names, filled in."""
        signature = inspect.signature(self.python_callable)
        try:
            bound = signature.bind_partial(*self.op_args, **self.op_kwargs)
        except TypeError as err:
            raise ValueError(
                f"the arguments do not fit {self.python_callable.__name__}{signature}: {err}"
            ) from None
        if not rendered:  # before rendering, upstream XComs are references, not values
            bound.arguments = {k: _placeholder(v) for k, v in bound.arguments.items()}
        args, kwargs = _split(signature, bound.arguments)
        for name, parameter in signature.parameters.items():
            if (
                name in CONTEXT_KEYS
                and name not in bound.arguments
                and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
                and self._context is not None
            ):
                kwargs[name] = CONTEXT_KEYS[name](self._context)
        where = f"of {self.python_callable.__name__}()"
        for i, value in enumerate(args):  # Data(...) travels as its JSON marker
            to_json(encode(value, []), f"positional argument {i} {where}")
        for name, value in kwargs.items():
            to_json(encode(value, []), f"argument {name!r} {where}")
        return args, kwargs


def _leaves_argv_to_the_runtime(kwargs: Mapping[str, Any]) -> bool:
    """``argv=`` with a function that has a parameter named ``argv`` the call leaves empty:
    the runtime gives it ``sys.argv`` (``runtime/program_call.py``), as for an entrypoint."""
    function = kwargs.get("python_callable")
    if kwargs.get("argv") is None or function is None:
        return False
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    if ARGV_PARAMETER not in names:
        return False
    given = names[: len(kwargs.get("op_args") or ())]
    return ARGV_PARAMETER not in given and ARGV_PARAMETER not in (kwargs.get("op_kwargs") or {})


def source_location(function: Callable[..., Any]) -> dict[str, Any]:
    """The DAG file and the line of the function's ``def``, so a traceback from a pod names
    them; nothing where Python cannot tell (a function made at run time)."""
    try:
        path = inspect.getsourcefile(function)
        lines, start = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return {}
    for offset, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return {"source_file": path, "source_line": start + offset}
    return {}


def _split(signature: inspect.Signature, arguments: Mapping[str, Any]) -> tuple[list, dict]:
    """Bound arguments as a call passes them: by name where a name can take them, so the call
    reads as the function's own names; positionally up to the last positional-only or
    non-empty ``*args`` parameter, which nothing else can fill; ``**kwargs`` spread out."""
    params = list(signature.parameters.values())
    last = max(
        (
            i
            for i, p in enumerate(params)
            if p.name in arguments
            and (p.kind is p.POSITIONAL_ONLY or (p.kind is p.VAR_POSITIONAL and arguments[p.name]))
        ),
        default=-1,
    )
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for i, p in enumerate(params):
        if p.name not in arguments:
            continue
        value = arguments[p.name]
        if i <= last and p.kind is p.VAR_POSITIONAL:
            args.extend(value)
        elif i <= last:
            args.append(value)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(value)
        elif p.kind is not p.VAR_POSITIONAL:  # an empty *args passes nothing
            kwargs[p.name] = value
    return args, kwargs


def _placeholder(value: Any) -> Any:
    """Stand-in for a value that only exists at run time (an upstream XCom)."""
    from airflow.sdk.definitions._internal.mixins import ResolveMixin

    if isinstance(value, ResolveMixin):
        return f"<{type(value).__name__}>"
    if isinstance(value, Mapping):
        return {k: _placeholder(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_placeholder(v) for v in value]
    return value


def decorator_for(
    operator_class: type[JaxDecoratedMixin], runs_on: str
) -> Callable[..., TaskDecorator]:
    """The ``@task.<name>`` function for one decorated operator class."""
    from airflow.sdk.bases.decorator import task_decorator_factory

    def jax_task(
        python_callable: Callable | None = None, multiple_outputs: bool | None = None, **kwargs: Any
    ) -> TaskDecorator:
        return task_decorator_factory(
            python_callable=python_callable,
            multiple_outputs=multiple_outputs,
            decorated_operator_class=operator_class,
            **kwargs,
        )

    jax_task.__doc__ = f"""Wrap a function to run in every JAX process of {runs_on}.

    The function's source and JSON arguments are shipped to each process; the runtime calls it
    after ``jax.distributed.initialize()``. Process 0's return value (JSON) is the XCom.

    :param python_callable: the function. It runs from its own source, so it must not use
        names from an enclosing function; its arguments must be JSON-serializable.
    :param multiple_outputs: push each key of a returned dict as its own XCom.
    :param kwargs: any ``{operator_class.__bases__[-1].__name__}`` argument, e.g. ``accelerator``
        and ``image``.
    """
    return jax_task
