"""Every argument of the JAX operators, declared once: its kind (and so its one check), its
``:param`` text, whether Airflow renders it, and whether it is the job spec's field of the same
name. The operator's checks at construction, its ``template_fields``, its docstring, the spec
fields it copies and ``docs/arguments.md`` all follow from this table; the signature gives each
argument's type and default, and a test holds the two together.

Rules between arguments (a capacity list's waits against ``queue_timeout``, the local tier
against the host's memory, the provider's own names arriving through another argument) are
checked where the values meet: the operator's ``__init__`` and the job spec, both at parse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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
from airflow_provider_jax.manifest.pod_command import check_python, step_count
from airflow_provider_jax.manifest.pod_override import check_override
from airflow_provider_jax.manifest.secret_refs import as_secret_refs
from airflow_provider_jax.operators.argument_types import as_list, as_mapping
from airflow_provider_jax.operators.deadline_alerts import check_alerts
from airflow_provider_jax.reporting.host_logs import STREAM_LOGS
from airflow_provider_jax.runtime.output_paths import check_storage_path
from airflow_provider_jax.runtime.profiling import check_profile_steps


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
ANNOTATIONS = Kind("annotations (qualified name → string)", _mapping_then(syntax.annotations))
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
IMAGE = Kind("image reference", lambda name, value: image_reference(name, value) or value)
PATH = Kind("`gs://` URI or absolute path", check_storage_path)
BYTES = Kind("byte size with a unit (`64Gi`)", _byte_size)
STEP_COUNT = Kind("integer >= 1 (or its digits, rendered)", lambda name, value: step_count(value))
# Kinds whose own type parses and checks them (with the arguments they combine with).
ACCELERATOR = Kind("accelerator (parsed by the operator)", lambda name, value: value)
ASSET = Kind("Asset", lambda name, value: value)  # checked with output_dir, for its alias
PATHWAYS = Kind("True | False | Pathways(...)", lambda name, value: Pathways.of(value))
CAPACITY = Kind("capacity | [capacity, ...]", lambda name, value: value)
BY_CAPACITY = Kind("checked with `capacity`", lambda name, value: value)
PORT = Kind("TCP port (1-65535)", _port)
STEPS = Kind("(start, count)", lambda name, value: check_profile_steps(value))
SECRETS = Kind("list of SecretRef or Secret", lambda name, value: as_secret_refs(value))
CHAIN = Kind("service account or list of them", _strings_or_one)
OPTIONAL_FLAG = Kind(
    "True | False | None", lambda name, value: as_bool(name, value, optional=True), optional=True
)
PYTHON = Kind("executable (name or path)", lambda name, value: check_python(value) or value)


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
DEADLINE = Kind("DeadlineAlert | [DeadlineAlert, ...]", check_alerts)


@dataclass(frozen=True)
class Argument:
    """One operator argument: see the module's docstring."""

    name: str
    kind: Kind
    doc: str
    templated: bool = False
    spec: bool = False  # the JaxJobSpec field of this name takes its value

    def check(self, value: object) -> Any:
        """The value as the operator keeps it. Jinja is left for after rendering in a
        templated argument and refused in any other, which nothing would render."""
        if not self.templated:
            not_templated(self.name, value, TEMPLATED)
        elif holds_template(value):
            return value
        return self.kind(self.name, value)


def _arguments(*arguments: Argument) -> tuple[Argument, ...]:
    return arguments


JOB_ARGUMENTS = _arguments(
    Argument("accelerator", ACCELERATOR, "the parsed accelerator (slice shape or GPU nodes).", spec=True),
    Argument("image", IMAGE.or_none(), "the container image; it must hold JAX for the "
             "accelerator. Default: ``[jax] default_image``; the local backend needs none.",
             templated=True),
    Argument("command", ARGV.or_none(), "argv to run on every host instead of an entrypoint; "
             "the JAX coordination env is set for it.", templated=True),
    Argument("entrypoint", TEXT.or_none(), "``\"package.module:function\"`` to call on every "
             "host after ``jax.distributed.initialize()``; its JSON return value on process 0 "
             "is the XCom.", templated=True),
    Argument("entrypoint_kwargs", JSON_OBJECT.or_none(), "JSON keyword arguments for it.",
             templated=True),
    Argument("argv", ARGV.or_none(), "``sys.argv[1:]`` for the entrypoint (or decorated "
             "function), as ``python train.py --workdir=...`` would give it: argparse reads it; "
             "a program that imports ``absl.app`` is run through ``absl.app.run`` (its flags, "
             "JAX's flags, INFO logs, and what is left of argv by position, as ``main(_)`` "
             "takes it); otherwise a parameter named ``argv`` gets ``sys.argv``.",
             templated=True),
    Argument("num_slices", whole(1), "TPU slices (multislice over DCN); 1 for GPU jobs.",
             spec=True),
    Argument("min_slices", whole(1).or_none(), "elastic slices: when whole slices lose their "
             "capacity for longer than ``shrink_after``, go on with the slices left, as long as "
             "there are this many, from the newest checkpoint in ``output_dir``; grow back to "
             "``num_slices`` at the first checkpoint after their capacity returns "
             "(``docs/elastic.md``). Unset: wait for every slice."),
    Argument("shrink_after", DURATION.or_none(), "with ``min_slices``: how long a lost slice's "
             "capacity may take to come back before the job goes on without it (default 10 "
             "minutes)."),
    Argument("env", ENV.or_none(), "extra environment variables, strings only.",
             templated=True),
    Argument("output_dir", PATH.or_none(), "``gs://`` or an absolute path for checkpoints and "
             "large results; template it per run (``.../{{ ds_nodash }}``).", templated=True),
    Argument("checkpoint_asset", ASSET.or_none(), "an ``Asset`` that gets an event when the task "
             "succeeds, with the newest finalized step of ``<output_dir>/checkpoints``, the "
             "leader's last report and the JobSet's name in its ``extra``; no event when there "
             "is no finalized step."),
    Argument("initialize_distributed", OPTIONAL_FLAG, "call ``jax.distributed.initialize()`` "
             "first (default: yes, except under Pathways)."),
    Argument("require_distributed", FLAG, "``command=`` only: a process of a multi-host job "
             "that imports JAX and exits without joining ``jax.distributed`` fails the job "
             "(exit 3) instead of only warning in the log that it ran alone."),
    Argument("pathways", PATHWAYS, "TPU only: run under Pathways, one process driving every chip of "
             "every slice: ``True`` or ``Pathways(...)`` (``docs/pathways.md``)."),
    Argument("pip_packages", list_of(str, "strings"), "packages to ``pip install`` in each "
             "process before the call."),
    Argument("python", PYTHON, "the interpreter in the image."),
    Argument("name", TEXT.or_none(), "the JobSet's name (default: derived from the task "
             "instance).", templated=True),
    Argument("namespace", LABEL_NAME, "the Kubernetes namespace.", templated=True, spec=True),
    Argument("labels", LABELS.or_none(), "extra labels on the JobSet and its pods.",
             templated=True),
    Argument("annotations", ANNOTATIONS.or_none(), "extra annotations on the JobSet and its pods.",
             templated=True),
    Argument("container_resources", RESOURCES.or_none(), "``{\"requests\": {...}, \"limits\": "
             "{...}}`` beside the accelerator's."),
    Argument("service_account_name", OBJECT_NAME.or_none(), "the pods' Kubernetes service "
             "account (Workload Identity).", spec=True),
    Argument("node_selector", LABELS.or_none(), "extra node selector terms.", spec=True),
    Argument("tolerations", list_of(Mapping, "mappings"), "extra tolerations.", spec=True),
    Argument("volumes", list_of(Mapping, "mappings"), "extra pod volumes.", spec=True),
    Argument("volume_mounts", list_of(Mapping, "mappings"), "extra container volume mounts.",
             spec=True),
    Argument("storage", list_of(Storage, "Storage"), "claims (Filestore, Parallelstore, Lustre, "
             "PD) and GCS buckets by name, mounted on every host (``docs/data.md``).",
             spec=True),
    Argument("max_restarts", whole(0), "whole-slice restarts on disruptions (preemption, a "
             "lost or hung host, a death by signal) within one try; a bug in the code fails at "
             "once and spends none.", spec=True),
    Argument("restart_on_exit_codes", list_of(int, "integers"), "more exit codes (1-255) that "
             "mean \"restart the slice\", as xpk's ``--restart-on-exit-codes``; 42, 124 and "
             "129-255 (deaths by signal) always do.", spec=True),
    Argument("restart_strategy", enum(*RESTART_STRATEGIES), "``recreate`` (every pod "
             "recreated) or ``in_place`` (healthy pods' containers restart where they are; "
             "JobSet's ``InPlaceRestart``).", spec=True),
    Argument("local_checkpoint_size", BYTES.or_none(), "a per-host checkpoint tier in RAM of "
             "this size (``\"64Gi\"``), at ``runtime.local_checkpoint_dir()``; it survives "
             "in-place restarts.", spec=True),
    Argument("termination_grace_period", whole(1).or_none(), "seconds from SIGTERM "
             "(preemption, eviction, a restart) to SIGKILL: the pods' "
             "``terminationGracePeriodSeconds``, the time a ``runtime.on_preemption`` hook has "
             "to save. Spot VMs give at most about 15 s.", spec=True),
    Argument("retry_on_code_error", OPTIONAL_FLAG, "deprecated: ``False`` is "
             "``retry_policy=JaxRetryPolicy(code_errors='fail')``. The provider's retry policy "
             "decides by the error (``docs/recovery.md``)."),
    Argument("progress_timeout", SECONDS.or_none(), "seconds without a ``report()`` call after "
             "which a process counts as hung: it prints every thread's stack and exits 124, "
             "and the slice restarts. Armed at the first report. Off (None) by default."),
    Argument("total_steps", STEP_COUNT.or_none(), "the run's length in steps, so the task log "
             "shows ``step 1200/10000 (12%) · 3.1 steps/s · ETA 47m``.", templated=True),
    Argument("deadline", DEADLINE.or_none(), "Airflow ``DeadlineAlert``s for this task, as "
             "the DAG's own ``deadline=`` takes them. When the live ETA (which needs "
             "``total_steps``) passes one, the task log says so and the alert's callback "
             "runs then, not once the time has passed. The DAG's alerts are held against the "
             "ETA too (``docs/deadlines.md``)."),
    Argument("profile_steps", STEPS.or_none(), "every host captures a JAX profiler trace of "
             "these steps, as its ``report(step=...)`` calls count them, into "
             "``<output_dir>/profiles/try-<n>/host-<i>/``. At most 100 steps."),
    Argument("debug_dump", FLAG, "XLA dumps its HLO modules on every host, and a failed host "
             "saves every thread's stack and its last log lines, to "
             "``<output_dir>/debug/try-<n>/host-<i>/`` before the pod exits."),
    Argument("checkpoint_warn_after", DURATION.or_none(), "warn once in the task log when a "
             "multi-host job that checkpoints has gone this long without a new finalized step; "
             "None: never."),
    Argument("ttl_seconds_after_finished", whole(0).or_none(), "let Kubernetes delete a "
             "finished JobSet after this long.", spec=True),
    Argument("priority_class_name", OBJECT_NAME.or_none(), "the pods' PriorityClass.",
             spec=True),
    Argument("queue_name", LABEL_VALUE.or_none(), "a Kueue LocalQueue; the JobSet is created "
             "suspended for Kueue to admit.", spec=True),
    Argument("queue_timeout", DURATION.or_none(), "the longest wait for capacity, from "
             "creating the JobSet to ``queue_timeout_until``; past it the JobSet is deleted and "
             "the task fails with the last reason it waited for."),
    Argument("queue_timeout_until", enum("running", "admitted"), "``running`` (every pod "
             "running) or ``admitted`` (Kueue admitted the JobSet)."),
    Argument("capacity", CAPACITY, "where the nodes come from: ``on-demand``, ``spot``, "
             "``reservation:<name>`` or ``flex-start``; or an ordered list of them "
             "(``docs/capacity.md``).", spec=True),
    Argument("capacity_wait", DURATION.or_none(), "how long each choice of a capacity list may "
             "take to get every pod running before the next is tried."),
    Argument("compute_class", BY_CAPACITY.or_none(), "a GKE custom ComputeClass whose priorities pick "
             "the capacity."),
    Argument("reservation_project", BY_CAPACITY.or_none(), "the project sharing the reservation, when "
             "not the cluster's."),
    Argument("placement", TEXT.or_none(), "Kueue topology-aware placement for GPU and "
             "multislice jobs: ``compact``, ``required:<level>`` or ``preferred:<level>``.",
             spec=True),
    Argument("pod_template_override", POD_TEMPLATE.or_none(), "a pod template merged over the "
             "generated one as Kubernetes merges a pod (``docs/operators.md``).", spec=True),
    Argument("image_pull_policy", enum(*syntax.PULL_POLICIES).or_none(), "the container's "
             "``imagePullPolicy``.", spec=True),
    Argument("coordinator_port", PORT.or_none(), "the JAX coordinator's port on process 0 "
             "(default: 8490, clear of libtpu's and JAX's own; derived from the JobSet name "
             "where a GPU node may be shared).", spec=True),
    Argument("host_network", OPTIONAL_FLAG, "run the pods on the node's network (default: "
             "multi-host TPU slices and multi-node GPU jobs without GPUDirect, as xpk does).",
             spec=True),
    Argument("gpu_networking", enum("auto", "none"), "``auto`` gives multi-node GPU pods their "
             "machine type's GPUDirect networking (TCPX, TCPXO or RDMA); ``none`` leaves plain "
             "pods.", spec=True),
    Argument("gpu_networks", list_of(str, "strings"), "the cluster's GKE networks for "
             "GPUDirect, eth0 first (default: the names GKE's GPUDirect guides create).",
             spec=True),
    Argument("secrets", SECRETS, "Kubernetes Secrets by reference (``SecretRef`` or the cncf "
             "provider's ``Secret``); values never enter the manifest.", spec=True),
    Argument("security_context", SECURITY_CONTEXT.or_none(), "the container's securityContext "
             "(default: no privilege escalation, all capabilities dropped, RuntimeDefault "
             "seccomp; ``{}`` for none).", spec=True),
    Argument("backend", enum(*BACKENDS).or_none(), "where the JobSet runs (default: "
             "``[jax] default_backend``)."),
    Argument("kubernetes_conn_id", TEXT.or_none(), "the Kubernetes connection (when no GKE "
             "cluster is named)."),
    Argument("deferrable", OPTIONAL_FLAG, "wait in the triggerer, freeing the worker slot "
             "(default: ``[operators] default_deferrable``)."),
    Argument("on_finish_action", enum(*ON_FINISH_ACTIONS), "what happens to the JobSet when "
             "the task ends."),
    Argument("poll_interval", SECONDS, "seconds between status reads when the identity may not "
             "watch."),
    Argument("stream_logs", enum(*STREAM_LOGS), "whose output the task log shows while the "
             "job runs: process 0, every host (``[slice/host]``-prefixed) or nobody."),
    Argument("project_id", TEXT.or_none(), "the GKE cluster's project."),
    Argument("location", TEXT.or_none(), "the GKE cluster's region or zone."),
    Argument("cluster_name", TEXT.or_none(), "a GKE cluster; its endpoint and CA are looked up "
             "through Google."),
    Argument("gcp_conn_id", TEXT, "the Google connection (GKE tokens, ``gs://`` results)."),
    Argument("impersonation_chain", CHAIN.or_none(), "service accounts to impersonate with "
             "``gcp_conn_id``."),
)  # fmt: skip

# The arguments of each operator of its own, before the shared ones.
TPU_ARGUMENTS = _arguments(
    Argument(
        "accelerator",
        TEXT,
        "a slice such as ``tpu-v6e-16``, ``v5litepod-4x4``, "
        "``v5p-4x4x12`` or ``tpu7x-128``; every device type xpk accepts, in its spelling "
        "or with ``tpu-``.",
    ),
    Argument(
        "num_slices",
        whole(1),
        "more than one makes a multislice job (``MEGASCALE_*`` "
        "env is set); GKE runs multislice on multi-host slices only.",
    ),
    Argument(
        "chips_per_host",
        whole(1).or_none(),
        "``8`` asks for one 8-chip VM for a 2x4 "
        "v5e/v6e slice instead of the default two 4-chip VMs.",
    ),
    Argument(
        "dynamic_slicing",
        FLAG,
        "GKE's dynamic slicing: Kueue and GKE's slice controller carve a tpu7x super-slice "
        "(whole 4x4x4 cubes) or sub-slice (2x2x1, 2x2x2, 2x2x4, 2x4x4) out of a cube pool at "
        "admission, instead of one node pool holding the slice; needs ``queue_name`` "
        "(docs/ironwood.md).",
    ),
)
GPU_ARGUMENTS = _arguments(
    Argument(
        "accelerator",
        TEXT,
        "a GPU model such as ``h100``, ``a100-80gb``, its GKE label, "
        "or an xpk device type such as ``h100-mega-80gb-8`` or ``gb200-4``.",
    ),
    Argument(
        "gpus_per_node",
        whole(1).or_none(),
        "GPUs each node's pod takes (default: the xpk device type's count).",
    ),
    Argument("num_nodes", whole(1), "how many nodes, one JAX process each."),
)

BY_NAME: dict[str, Argument] = {a.name: a for a in JOB_ARGUMENTS}
TEMPLATED: tuple[str, ...] = tuple(a.name for a in JOB_ARGUMENTS if a.templated)
SPEC_FIELDS: tuple[str, ...] = tuple(a.name for a in JOB_ARGUMENTS if a.spec)


def checked(
    values: Mapping[str, Any], arguments: tuple[Argument, ...] = JOB_ARGUMENTS
) -> dict[str, Any]:
    """Each declared argument of ``values`` (an ``__init__``'s ``locals()``) through its kind."""
    return {a.name: a.check(values[a.name]) for a in arguments if a.name in values}


def param_docs(arguments: tuple[Argument, ...] = JOB_ARGUMENTS) -> str:
    """The ``:param`` lines of a docstring, from the declaration."""
    lines = []
    for a in arguments:
        marks = " (templated)" if a.templated else ""
        lines.append(f":param {a.name}: {a.doc}{marks}")
    return "\n".join(lines)
