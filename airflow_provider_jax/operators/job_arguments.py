"""Every argument of the JAX operators, declared once as a typed field of
:class:`JobArguments`: its type and default (the operators' signature, which ``make docs``
writes from it), its kind (and so its one check), its ``:param`` text, whether Airflow renders
it, and where it goes (:class:`To`). The operator's checks at construction, its
``template_fields``, its docstring, the spec fields it copies and ``docs/arguments.md`` all
follow from this class.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Flag, auto
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

from airflow_provider_jax.arguments import (
    DURATION,
    FLAG,
    SECONDS,
    Kind,
    as_bool,
    enum,
    holds_template,
    image_reference,
    not_templated,
    whole_number,
)
from airflow_provider_jax.contract.backend import BACKENDS, ON_FINISH_ACTIONS
from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.manifest import pod_schema
from airflow_provider_jax.manifest.in_place_restart import RESTART_STRATEGIES
from airflow_provider_jax.manifest.named_storage import Storage
from airflow_provider_jax.manifest.pathways import Pathways
from airflow_provider_jax.manifest.pod_command import check_python, step_count, to_json
from airflow_provider_jax.manifest.pod_override import check_override
from airflow_provider_jax.manifest.secret_refs import as_secret_refs
from airflow_provider_jax.operators.argument_types import as_list, as_mapping
from airflow_provider_jax.operators.deadline_alerts import check_alerts
from airflow_provider_jax.reporting.host_logs import STREAM_LOGS
from airflow_provider_jax.runtime.output_paths import check_storage_path
from airflow_provider_jax.runtime.profiling import check_profile_steps

if TYPE_CHECKING:
    from airflow.sdk import Asset
    from airflow.sdk.definitions.deadline import DeadlineAlert


def whole(minimum: int) -> Kind:
    return Kind(
        f"integer >= {minimum}", lambda name, value: whole_number(name, value, minimum=minimum)
    )


def _port(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ValueError(f"{name} must be a TCP port (1-65535), got {value!r}.")
    return value


def _text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value or value != value.strip():
        raise ValueError(f"{name} must be a non-empty string with no surrounding whitespace, "
                         f"got {value!r}.")  # fmt: skip
    return value


def _byte_size(name: str, value: object) -> object:
    syntax.byte_size(name, value)
    return value


def list_of(item: type, name: str) -> Kind:
    return Kind(f"list of {name}", lambda argument, value: as_list(argument, value, item))


def _strings_or_one(name: str, value: object) -> object:
    return _text(name, value) if isinstance(value, str) else as_list(name, value, str)


def _mapping_then(check: Callable[[str, dict[str, Any]], object]) -> Callable[[str, Any], Any]:
    """A mapping, then held to ``check`` (Kubernetes' rules for what it holds)."""

    def checked_mapping(name: str, value: object) -> dict[str, Any]:
        mapping = as_mapping(name, value)
        check(name, mapping)
        return mapping

    return checked_mapping


def _security_context(name: str, value: dict[str, Any]) -> None:
    pod_schema.check(name, value, pod_schema.SECURITY_CONTEXT)
    syntax.security_context(name, value)


MAPPING = Kind("mapping", lambda name, value: as_mapping(name, value))
JSON_OBJECT = Kind("JSON object (str keys)", MAPPING.check)
ENV = Kind("env (name → string)", MAPPING.check)
LABELS = Kind("labels (qualified name → label value)", _mapping_then(syntax.labels))
ANNOTATIONS = Kind("annotations (qualified name → string)", _mapping_then(syntax.annotation_values))
RESOURCES = Kind(
    "resources (`limits`/`requests` → quantities)",
    _mapping_then(lambda name, value: syntax.container_resources(value)),
)
SECURITY_CONTEXT = Kind("container securityContext", _mapping_then(_security_context))
POD_TEMPLATE = Kind(
    "pod template (partial)", _mapping_then(lambda name, value: check_override(value))
)
TEXT = Kind("string", _text)
LABEL_NAME = Kind("DNS-1123 label", syntax.dns1123_label)
OBJECT_NAME = Kind("DNS-1123 subdomain", syntax.dns1123_subdomain)
LABEL_VALUE = Kind("label value", syntax.label_value)


def _image(name: str, value: object) -> object:
    image_reference(name, value)
    return value


def _python(name: str, value: object) -> object:
    check_python(value)
    return value


IMAGE = Kind("image reference", _image)
PATH = Kind("`gs://` URI or absolute path", check_storage_path)
BYTES = Kind("byte size with a unit (`64Gi`)", _byte_size)
STEP_COUNT = Kind("integer >= 1 (or its digits, rendered)", lambda name, value: step_count(value))
# Kinds whose own type parses and checks them (with the arguments they combine with).
ACCELERATOR = Kind("accelerator (parsed by the operator)", lambda name, value: value)
ASSET = Kind("Asset", lambda name, value: value)  # checked with output_dir, for its alias
PATHWAYS = Kind("True | False | Pathways(...)", lambda name, value: (Pathways.of(value), value)[1])
CAPACITY = Kind("capacity | [capacity, ...]", lambda name, value: value)
BY_CAPACITY = Kind("checked with `capacity`", lambda name, value: value)
PORT = Kind("TCP port (1-65535)", _port)
STEPS = Kind("(start, count)", lambda name, value: check_profile_steps(value))
SECRETS = Kind("list of SecretRef or Secret", lambda name, value: as_secret_refs(value))
CHAIN = Kind("service account or list of them", _strings_or_one)
OPTIONAL_FLAG = Kind(
    "True | False | None", lambda name, value: as_bool(name, value, optional=True), optional=True
)
PYTHON = Kind("executable (name or path)", _python)


def _argv(name: str, value: object) -> list[str]:
    """A process's arguments, in order: strings, none with a NUL byte, which no process can be
    given; a ``command`` starts with the program to run."""
    if isinstance(value, set | frozenset):
        raise TypeError(
            f"{name} must be a list or tuple: a {type(value).__name__} has no order, and each "
            "process could get its arguments in another one."
        )
    items = as_list(name, value, str)
    if any("\0" in item for item in items):
        raise ValueError(f"{name} argument holds a NUL byte, which no process can be given.")
    if name == "command" and (not items or not items[0].strip()):
        raise ValueError(
            f"command must start with the program to run (e.g. ['python3', 'train.py']), got "
            f"{value!r}."
        )
    return items


ARGV = Kind("list of strings", _argv)


def _jax_config(name: str, value: object) -> dict[str, Any]:
    """JAX's own option names (``jax_*``, as ``jax.config.update`` takes them), each to a JSON
    value: the pods set them, so a typo or a value JSON can't carry fails here, at parse."""
    options = as_mapping(name, value)
    for option, setting in options.items():
        if not isinstance(option, str) or not option.startswith("jax_") or option != option.strip():
            raise ValueError(
                f"{name} names JAX options as jax.config.update takes them ('jax_...'), got "
                f"{option!r}."
            )
        to_json(setting, f"{name}[{option!r}]")
    return options


JAX_CONFIG = Kind("JAX options (`jax_*` name → JSON value)", _jax_config)
DEADLINE = Kind("DeadlineAlert | [DeadlineAlert, ...]", check_alerts)


class To(Flag):
    """Where an argument's value goes: each destination is read in one place, which takes
    every argument routed to it by name (a test holds the names to the reader's own)."""

    TASK = auto()  # the operator's plan (job_plan.py), or what the spec builds from it
    SPEC = auto()  # JaxJobSpec's field of the same name, as given (job_spec.build_spec)
    CALL = auto()  # the runtime's call in every pod, as JSON (job_spec.runtime_call)
    WATCH = auto()  # how the job is waited on (contract/watch_options.py, of_task)
    SETTINGS = auto()  # the backend's settings for a try (job_settings.py)


@dataclass(frozen=True)
class Declared:
    """What the declaration of one argument says besides its type and default."""

    kind: Kind
    doc: str
    templated: bool
    to: To
    only: str | None  # "tpu" or "gpu": an argument of one operator only

    def check(self, name: str, value: object, *, rendered: bool) -> Any:
        """The value as the operator keeps it. Jinja is left for after rendering in a
        templated argument and refused in any other, which nothing would render."""
        if not self.templated:
            not_templated(name, value, TEMPLATED)
        elif holds_template(value) and not rendered:
            return value
        return self.kind(name, value)


DECLARED = "airflow_provider_jax.declared"  # the dataclass field's metadata key


def argument(
    kind: Kind,
    doc: str,
    *,
    to: To,
    default: Any = dataclasses.MISSING,
    templated: bool = False,
    only: str | None = None,
) -> Any:
    """One argument: its kind (and so its one check), its ``:param`` text, whether Airflow
    renders it, where it goes, and its default (the field's type is the signature's)."""
    return dataclasses.field(
        default=default, metadata={DECLARED: Declared(kind, doc, templated, to, only)}
    )


_T = TypeVar("_T")


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(argument,))
def arguments_class(cls: type[_T]) -> type[_T]:
    """A frozen, keyword-only dataclass of arguments declared with :func:`argument`."""
    return dataclass(frozen=True, kw_only=True)(cls)


@arguments_class
class JobArguments:
    """Every argument of the JAX operators, declared once: the type and default of each is its
    parameter's in the operators' signature (``make docs`` writes that signature into
    ``job_operator.py``, and a test holds it to this class), its kind its one check, its text
    its ``:param`` line and its line in ``docs/arguments.md``. The operator holds one of these
    whole, checked (:meth:`checked`), as the user gave it; what follows from several arguments
    together (the parsed accelerator, the capacity list, an elastic policy) the operator keeps
    beside it, typed on its own.

    Rules between arguments (a capacity list's waits against ``queue_timeout``, the local tier
    against the host's memory, the provider's own names arriving through another argument) are
    checked where the values meet: the operator's construction and the job spec, both at parse.
    """

    accelerator: str = argument(
        TEXT,
        "a TPU slice such as ``tpu-v6e-16``, ``v5litepod-4x4``, ``v5p-4x4x12`` or ``tpu7x-128`` "
        "(every device type xpk accepts, in its spelling or with ``tpu-``); for "
        "``JaxGpuJobOperator`` a GPU model such as ``h100``, ``a100-80gb``, its GKE label, or an "
        "xpk device type such as ``h100-mega-80gb-8``.",
        to=To.TASK,
    )
    num_slices: int = argument(
        whole(1),
        "more than one makes a multislice job (``MEGASCALE_*`` env is set); GKE runs multislice on"
        " multi-host slices only.",
        default=1,
        to=To.SPEC,
    )
    chips_per_host: int | None = argument(
        whole(1).or_none(),
        "``8`` asks for one 8-chip VM for a 2x4 v5e/v6e slice instead of the default two 4-chip "
        "VMs.",
        default=None,
        to=To.TASK,
        only="tpu",
    )
    dynamic_slicing: bool = argument(
        FLAG,
        "GKE's dynamic slicing: Kueue and GKE's slice controller carve a tpu7x super-slice (whole "
        "4x4x4 cubes) or sub-slice (2x2x1, 2x2x2, 2x2x4, 2x4x4) out of a cube pool at admission, "
        "instead of one node pool holding the slice; needs ``queue_name`` (docs/ironwood.md).",
        default=False,
        to=To.TASK,
        only="tpu",
    )
    gpus_per_node: int | None = argument(
        whole(1).or_none(),
        "GPUs each node's pod takes (default: the xpk device type's count).",
        default=None,
        to=To.TASK,
        only="gpu",
    )
    num_nodes: int | None = argument(
        whole(1).or_none(),
        "how many nodes, one JAX process each.",
        default=None,
        to=To.TASK,
        only="gpu",
    )
    image: str | None = argument(
        IMAGE.or_none(),
        "the container image; it must hold JAX for the accelerator. Default: ``[jax] "
        "default_image``; the local backend needs none.",
        default=None,
        templated=True,
        to=To.TASK,
    )
    command: Sequence[str] | None = argument(
        ARGV.or_none(),
        "argv to run on every host instead of an entrypoint; the JAX coordination env is set for "
        "it.",
        default=None,
        templated=True,
        to=To.TASK,
    )
    entrypoint: str | None = argument(
        TEXT.or_none(),
        '``"package.module:function"`` to call on every host after '
        "``jax.distributed.initialize()``; its JSON return value on process 0 is the XCom.",
        default=None,
        templated=True,
        to=To.CALL,
    )
    entrypoint_kwargs: Mapping[str, Any] | None = argument(
        JSON_OBJECT.or_none(),
        "JSON keyword arguments for it.",
        default=None,
        templated=True,
        to=To.CALL,
    )
    argv: Sequence[str] | None = argument(
        ARGV.or_none(),
        "``sys.argv[1:]`` for the entrypoint (or decorated function), as ``python train.py "
        "--workdir=...`` would give it: argparse reads it; a program that imports ``absl.app`` is "
        "run through ``absl.app.run`` (its flags, JAX's flags, INFO logs, and what is left of argv"
        " by position, as ``main(_)`` takes it); otherwise a parameter named ``argv`` gets "
        "``sys.argv``.",
        default=None,
        templated=True,
        to=To.CALL,
    )
    min_slices: int | None = argument(
        whole(1).or_none(),
        "elastic slices: when whole slices lose their capacity for longer than ``shrink_after``, "
        "go on with the slices left, as long as there are this many, from the newest checkpoint in"
        " ``output_dir``; grow back to ``num_slices`` at the first checkpoint after their capacity"
        " returns (``docs/elastic.md``). Unset: wait for every slice.",
        default=None,
        to=To.TASK,
    )
    shrink_after: datetime.timedelta | float | None = argument(
        DURATION.or_none(),
        "with ``min_slices``: how long a lost slice's capacity may take to come back before the "
        "job goes on without it (default 10 minutes).",
        default=None,
        to=To.TASK,
    )
    env: Mapping[str, str] | None = argument(
        ENV.or_none(),
        "extra environment variables, strings only.",
        default=None,
        templated=True,
        to=To.TASK,
    )
    output_dir: str | None = argument(
        PATH.or_none(),
        "``gs://`` or an absolute path for checkpoints and large results; template it per run "
        "(``.../{{ ds_nodash }}``).",
        default=None,
        templated=True,
        to=To.TASK,
    )
    checkpoint_asset: Asset | None = argument(
        ASSET.or_none(),
        "an ``Asset`` that gets an event when the task succeeds, with the newest finalized step of"
        " ``<output_dir>/checkpoints``, the leader's last report and the JobSet's name in its "
        "``extra``; no event when there is no finalized step.",
        default=None,
        to=To.TASK,
    )
    initialize_distributed: bool | None = argument(
        OPTIONAL_FLAG,
        "call ``jax.distributed.initialize()`` first (default: yes, except under Pathways).",
        default=None,
        to=To.CALL,
    )
    require_distributed: bool = argument(
        FLAG,
        "``command=`` only: a process of a multi-host job that imports JAX and exits without "
        "joining ``jax.distributed`` fails the job (exit 3) instead of only warning in the log "
        "that it ran alone.",
        default=False,
        to=To.CALL,
    )
    pathways: bool | Pathways = argument(
        PATHWAYS,
        "TPU only: run under Pathways, one process driving every chip of every slice: ``True`` or "
        "``Pathways(...)`` (``docs/pathways.md``).",
        default=False,
        to=To.TASK,
    )
    pip_packages: Sequence[str] = argument(
        list_of(str, "strings"),
        "packages to ``pip install`` in each process before the call.",
        default=(),
        to=To.CALL,
    )
    python: str = argument(PYTHON, "the interpreter in the image.", default="python3", to=To.CALL)
    name: str | None = argument(
        TEXT.or_none(),
        "the JobSet's name (default: derived from the task instance).",
        default=None,
        templated=True,
        to=To.TASK,
    )
    namespace: str = argument(
        LABEL_NAME, "the Kubernetes namespace.", default="default", templated=True, to=To.SPEC
    )
    labels: Mapping[str, str] | None = argument(
        LABELS.or_none(),
        "extra labels on the JobSet and its pods.",
        default=None,
        templated=True,
        to=To.TASK,
    )
    annotations: Mapping[str, str] | None = argument(
        ANNOTATIONS.or_none(),
        "extra annotations on the JobSet and its pods.",
        default=None,
        templated=True,
        to=To.TASK,
    )
    container_resources: Mapping[str, Mapping[str, str]] | None = argument(
        RESOURCES.or_none(),
        '``{"requests": {...}, "limits": {...}}`` beside the accelerator\'s.',
        default=None,
        to=To.TASK,
    )
    service_account_name: str | None = argument(
        OBJECT_NAME.or_none(),
        "the pods' Kubernetes service account (Workload Identity).",
        default=None,
        to=To.SPEC,
    )
    node_selector: Mapping[str, str] | None = argument(
        LABELS.or_none(), "extra node selector terms.", default=None, to=To.TASK
    )
    tolerations: Sequence[Mapping[str, Any]] = argument(
        list_of(Mapping, "mappings"), "extra tolerations.", default=(), to=To.SPEC
    )
    volumes: Sequence[Mapping[str, Any]] = argument(
        list_of(Mapping, "mappings"), "extra pod volumes.", default=(), to=To.SPEC
    )
    volume_mounts: Sequence[Mapping[str, Any]] = argument(
        list_of(Mapping, "mappings"), "extra container volume mounts.", default=(), to=To.SPEC
    )
    storage: Sequence[Storage] = argument(
        list_of(Storage, "Storage"),
        "claims (Filestore, Parallelstore, Lustre, PD) and GCS buckets by name, mounted on every "
        "host (``docs/data.md``).",
        default=(),
        to=To.SPEC,
    )
    max_restarts: int = argument(
        whole(0),
        "whole-slice restarts on disruptions (preemption, a lost or hung host, a death by signal) "
        "within one try; a bug in the code fails at once and spends none.",
        default=3,
        to=To.SPEC,
    )
    restart_on_exit_codes: Sequence[int] = argument(
        list_of(int, "integers"),
        'more exit codes (1-255) that mean "restart the slice", as xpk\'s '
        "``--restart-on-exit-codes``; 42, 124 and 129-255 (deaths by signal) always do.",
        default=(),
        to=To.SPEC,
    )
    restart_strategy: str = argument(
        enum(*RESTART_STRATEGIES),
        "``recreate`` (every pod recreated) or ``in_place`` (healthy pods' containers restart "
        "where they are; JobSet's ``InPlaceRestart``).",
        default="recreate",
        to=To.SPEC,
    )
    local_checkpoint_size: str | None = argument(
        BYTES.or_none(),
        'a per-host checkpoint tier in RAM of this size (``"64Gi"``), at '
        "``runtime.local_checkpoint_dir()``; it survives in-place restarts.",
        default=None,
        to=To.SPEC,
    )
    termination_grace_period: int | None = argument(
        whole(1).or_none(),
        "seconds from SIGTERM (preemption, eviction, a restart) to SIGKILL: the pods' "
        "``terminationGracePeriodSeconds``, the time a ``runtime.on_preemption`` hook has to save."
        " Spot VMs give at most about 15 s.",
        default=None,
        to=To.SPEC,
    )
    retry_on_code_error: bool | None = argument(
        OPTIONAL_FLAG,
        "deprecated: ``False`` is ``retry_policy=JaxRetryPolicy(code_errors='fail')``. The "
        "provider's retry policy decides by the error (``docs/recovery.md``).",
        default=None,
        to=To.TASK,
    )
    progress_timeout: float | None = argument(
        SECONDS.or_none(),
        "seconds without a ``report()`` call after which a process counts as hung: it prints every"
        " thread's stack and exits 124, and the slice restarts. Armed at the first report. Off "
        "(None) by default.",
        default=None,
        to=To.CALL,
    )
    total_steps: int | str | None = argument(
        STEP_COUNT.or_none(),
        "the run's length in steps, so the task log shows "
        "``step 1200/10000 (12%) · 3.1 steps/s · ETA 47m``.",
        default=None,
        templated=True,
        to=To.CALL,
    )
    deadline: DeadlineAlert | Sequence[DeadlineAlert] | None = argument(
        DEADLINE.or_none(),
        "Airflow ``DeadlineAlert``s for this task, as the DAG's own ``deadline=`` takes them. When"
        " the live ETA (which needs ``total_steps``) passes one, the task log says so and the "
        "alert's callback runs then, not once the time has passed. The DAG's alerts are held "
        "against the ETA too (``docs/deadlines.md``).",
        default=None,
        to=To.WATCH,
    )
    profile_steps: tuple[int, int] | None = argument(
        STEPS.or_none(),
        "every host captures a JAX profiler trace of these steps, as its ``report(step=...)`` "
        "calls count them, into ``<output_dir>/profiles/try-<n>/host-<i>/``. At most 100 steps.",
        default=None,
        to=To.CALL,
    )
    debug_dump: bool = argument(
        FLAG,
        "XLA dumps its HLO modules on every host, and a failed host saves every thread's stack and"
        " its last log lines, to ``<output_dir>/debug/try-<n>/host-<i>/`` before the pod exits.",
        default=False,
        to=To.CALL,
    )
    jax_config: Mapping[str, Any] | None = argument(
        JAX_CONFIG.or_none(),
        "JAX options every process sets before anything else, as ``jax.config.update(name, "
        'value)``: ``{"jax_compilation_cache_dir": "gs://bucket/cache"}`` shares compiled '
        'programs between runs; ``{"jax_debug_nans": True}`` hunts a NaN.',
        default=None,
        to=To.CALL,
    )
    checkpoint_warn_after: datetime.timedelta | float | None = argument(
        DURATION.or_none(),
        "warn once in the task log when a multi-host job that checkpoints has gone this long "
        "without a new finalized step; None: never.",
        default=600.0,
        to=To.WATCH,
    )
    ttl_seconds_after_finished: int | None = argument(
        whole(0).or_none(),
        "let Kubernetes delete a finished JobSet after this long.",
        default=None,
        to=To.SPEC,
    )
    priority_class_name: str | None = argument(
        OBJECT_NAME.or_none(), "the pods' PriorityClass.", default=None, to=To.SPEC
    )
    queue_name: str | None = argument(
        LABEL_VALUE.or_none(),
        "a Kueue LocalQueue; the JobSet is created suspended for Kueue to admit.",
        default=None,
        to=To.SPEC,
    )
    queue_timeout: datetime.timedelta | float | None = argument(
        DURATION.or_none(),
        "the longest wait for capacity, from creating the JobSet to ``queue_timeout_until``; past "
        "it the JobSet is deleted and the task fails with the last reason it waited for.",
        default=None,
        to=To.WATCH,
    )
    queue_timeout_until: str = argument(
        enum("running", "admitted"),
        "``running`` (every pod running) or ``admitted`` (Kueue admitted the JobSet).",
        default="running",
        to=To.WATCH,
    )
    capacity: str | Sequence[str] = argument(
        CAPACITY,
        "where the nodes come from: ``on-demand``, ``spot``, ``reservation:<name>`` or "
        "``flex-start``; or an ordered list of them (``docs/capacity.md``).",
        default="on-demand",
        to=To.TASK,
    )
    capacity_wait: datetime.timedelta | float | None = argument(
        DURATION.or_none(),
        "how long each choice of a capacity list may take to get every pod running before the next"
        " is tried.",
        default=None,
        to=To.TASK,
    )
    compute_class: str | None = argument(
        BY_CAPACITY.or_none(),
        "a GKE custom ComputeClass whose priorities pick the capacity.",
        default=None,
        to=To.TASK,
    )
    reservation_project: str | None = argument(
        BY_CAPACITY.or_none(),
        "the project sharing the reservation, when not the cluster's.",
        default=None,
        to=To.TASK,
    )
    placement: str | None = argument(
        TEXT.or_none(),
        "Kueue topology-aware placement for GPU and multislice jobs: ``compact``, "
        "``required:<level>`` or ``preferred:<level>``.",
        default=None,
        to=To.SPEC,
    )
    pod_template_override: Mapping[str, Any] | None = argument(
        POD_TEMPLATE.or_none(),
        "a pod template merged over the generated one as Kubernetes merges a pod "
        "(``docs/operators.md``).",
        default=None,
        to=To.SPEC,
    )
    image_pull_policy: str | None = argument(
        enum(*syntax.PULL_POLICIES).or_none(),
        "the container's ``imagePullPolicy``.",
        default=None,
        to=To.SPEC,
    )
    coordinator_port: int | None = argument(
        PORT.or_none(),
        "the JAX coordinator's port on process 0 (default: 8490, clear of libtpu's and JAX's own; "
        "derived from the JobSet name where a GPU node may be shared).",
        default=None,
        to=To.SPEC,
    )
    host_network: bool | None = argument(
        OPTIONAL_FLAG,
        "run the pods on the node's network (default: multi-host TPU slices and multi-node GPU "
        "jobs without GPUDirect, as xpk does).",
        default=None,
        to=To.SPEC,
    )
    gpu_networking: str = argument(
        enum("auto", "none"),
        "``auto`` gives multi-node GPU pods their machine type's GPUDirect networking (TCPX, TCPXO"
        " or RDMA); ``none`` leaves plain pods.",
        default="auto",
        to=To.SPEC,
    )
    gpu_networks: Sequence[str] = argument(
        list_of(str, "strings"),
        "the cluster's GKE networks for GPUDirect, eth0 first (default: the names GKE's GPUDirect "
        "guides create).",
        default=(),
        to=To.SPEC,
    )
    secrets: Sequence[Any] = argument(
        SECRETS,
        "Kubernetes Secrets by reference (``SecretRef`` or the cncf provider's ``Secret``); values"
        " never enter the manifest.",
        default=(),
        to=To.SPEC,
    )
    security_context: Mapping[str, Any] | None = argument(
        SECURITY_CONTEXT.or_none(),
        "the container's securityContext (default: no privilege escalation, all capabilities "
        "dropped, RuntimeDefault seccomp; ``{}`` for none).",
        default=None,
        to=To.TASK,
    )
    backend: str | None = argument(
        enum(*BACKENDS).or_none(),
        "where the JobSet runs (default: ``[jax] default_backend``).",
        default=None,
        to=To.SETTINGS,
    )
    kubernetes_conn_id: str | None = argument(
        TEXT.or_none(),
        "the Kubernetes connection (when no GKE cluster is named).",
        default="kubernetes_default",
        to=To.SETTINGS,
    )
    deferrable: bool | None = argument(
        OPTIONAL_FLAG,
        "wait in the triggerer, freeing the worker slot (default: ``[operators] "
        "default_deferrable``).",
        default=None,
        to=To.SETTINGS,
    )
    on_finish_action: str = argument(
        enum(*ON_FINISH_ACTIONS),
        "what happens to the JobSet when the task ends.",
        default="delete_jobset",
        to=To.SETTINGS,
    )
    poll_interval: float = argument(
        SECONDS,
        "seconds between status reads when the identity may not watch.",
        default=10.0,
        to=To.WATCH,
    )
    stream_logs: str = argument(
        enum(*STREAM_LOGS),
        "whose output the task log shows while the job runs: process 0, every host "
        "(``[slice/host]``-prefixed) or nobody.",
        default="leader",
        to=To.WATCH,
    )
    project_id: str | None = argument(
        TEXT.or_none(), "the GKE cluster's project.", default=None, to=To.SETTINGS
    )
    location: str | None = argument(
        TEXT.or_none(), "the GKE cluster's region or zone.", default=None, to=To.SETTINGS
    )
    cluster_name: str | None = argument(
        TEXT.or_none(),
        "a GKE cluster; its endpoint and CA are looked up through Google.",
        default=None,
        to=To.SETTINGS,
    )
    gcp_conn_id: str = argument(
        TEXT,
        "the Google connection (GKE tokens, ``gs://`` results).",
        default="google_cloud_default",
        to=To.SETTINGS,
    )
    impersonation_chain: str | Sequence[str] | None = argument(
        CHAIN.or_none(),
        "service accounts to impersonate with ``gcp_conn_id``.",
        default=None,
        to=To.SETTINGS,
    )

    def checked(self, *, rendered: bool) -> JobArguments:
        """Each argument through its kind: at construction (templates left for later), and
        again once Airflow rendered them, before anything is created (a template can render to
        anything: a string for ``argv`` would otherwise be split into characters)."""
        return dataclasses.replace(
            self,
            **{
                f.name: declared(f).check(f.name, getattr(self, f.name), rendered=rendered)
                for f in dataclasses.fields(self)
            },
        )


def declared(field: dataclasses.Field[Any]) -> Declared:
    """What :func:`argument` declared for ``field``."""
    return cast(Declared, field.metadata[DECLARED])


ARGUMENTS: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(JobArguments)
TEMPLATED: tuple[str, ...] = tuple(f.name for f in ARGUMENTS if declared(f).templated)


def routed(to: To) -> tuple[str, ...]:
    """The arguments that go to ``to``, in declaration order."""
    return tuple(f.name for f in ARGUMENTS if to in declared(f).to)


def for_platform(platform: str) -> tuple[dataclasses.Field[Any], ...]:
    """The arguments one operator takes (``tpu`` or ``gpu``): the shared ones and its own."""
    return tuple(f for f in ARGUMENTS if declared(f).only in (None, platform))


def param_docs(platform: str) -> str:
    """The ``:param`` lines of an operator's docstring, from the declaration."""
    lines = []
    for f in for_platform(platform):
        marks = " (templated)" if declared(f).templated else ""
        lines.append(f":param {f.name}: {declared(f).doc}{marks}")
    return "\n".join(lines)
