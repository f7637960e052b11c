"""Every figure and name a page states that the code holds, checked against the code.

A figure is a phrase of the page with the code's value in it: when either changes alone, the
phrase is no longer on the page and the test fails, naming both. Names are checked by kind:
every argument (``name=``), setting, module, make target, file, XCom key, provider annotation,
``AIRFLOW_JAX_*`` variable, ``runtime.*`` function and exception a page names exists.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from airflow_provider_jax import runtime, settings
from airflow_provider_jax.backends.kubernetes import GONE_TIMEOUT_S
from airflow_provider_jax.backends.local.runner import _TICK_S
from airflow_provider_jax.backends.timeout_alarm import BACKSTOP_S
from airflow_provider_jax.checkpoints import stream
from airflow_provider_jax.contract.backend import BACKENDS, CLUSTER_DEADLINE_GRACE_S
from airflow_provider_jax.contract.elastic import DEFAULT_SHRINK_AFTER_S
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.hooks.jobset import LIST_PAGE_SIZE
from airflow_provider_jax.manifest import data_inputs, in_place_restart, local_checkpoints, pathways
from airflow_provider_jax.manifest.accelerators.tpu import GENERATIONS
from airflow_provider_jax.manifest.capacity import FLEX_START_MAX_RUN_S
from airflow_provider_jax.manifest.capacity_choices import DEFAULT_CAPACITY_WAIT_S
from airflow_provider_jax.manifest.coordination import (
    DEFAULT_COORDINATOR_PORT,
    DEFAULT_MEGASCALE_PORT,
    SHARED_PORT_RANGE,
)
from airflow_provider_jax.manifest.failure_policy import DEFAULT_MAX_RESTARTS
from airflow_provider_jax.manifest.spec import MAX_ENV_STRING
from airflow_provider_jax.operators import data_staging
from airflow_provider_jax.operators.retry_policy import CAPACITY_DELAY, DISRUPTION_DELAY
from airflow_provider_jax.reporting.checkpoint_freshness import DEFAULT_WARN_AFTER
from airflow_provider_jax.reporting.goodput import MAX_PHASES
from airflow_provider_jax.reporting.host_logs import SUMMARY_HOSTS, SUMMARY_LINES
from airflow_provider_jax.reporting.log_budget import MAX_LINE
from airflow_provider_jax.reporting.progress import SHOW_EVERY_S
from airflow_provider_jax.runtime import coordinator, debug_dump, exits, reports
from airflow_provider_jax.runtime.call import MAX_COMPRESSED_BYTES
from airflow_provider_jax.runtime.jax_cluster import NOT_JOINED_EXIT
from airflow_provider_jax.runtime.messages import MAX_REPORT_CHARS, TERMINATION_MESSAGE_LIMIT
from airflow_provider_jax.runtime.profiling import MAX_PROFILE_STEPS
from airflow_provider_jax.runtime.stores.gcs import DOWNLOAD_THREADS
from airflow_provider_jax.stores import RetryPolicy
from airflow_provider_jax.triggers.orbax_events import (
    TAKEOVER_SETTLE_SECONDS,
    OrbaxCheckpointEventTrigger,
)
from airflow_provider_jax.triggers.watch.checkpoint_freshness import MAX_INTERVAL
from airflow_provider_jax.triggers.watch.informer import WATCH_TIMEOUT
from airflow_provider_jax.triggers.watch.orphans import SWEEP_EVERY_S
from airflow_provider_jax.triggers.watch.pod_startup import CHECK_DELAYS, CHECK_EVERY
from airflow_provider_jax.triggers.watch.queue_position import POSITION_EVERY
from airflow_provider_jax.triggers.watch.stream_slots import MAX_OPENING
from tests.support.docs_pages import PAGES, REPO, prose

KIB, MIB, GIB = 2**10, 2**20, 2**30
WATCH = WatchOptions()
WORDS = {1: "one", 2: "two", 5: "five", 10: "ten"}
VERSIONS = dict(
    line.split("=", 1)
    for line in (REPO / "tools" / "control-plane" / "versions.env").read_text().splitlines()
    if line and not line.startswith("#")
)
XPK = json.loads((REPO / "tests" / "fixtures" / "xpk" / "device_types.json").read_text())
XPK_TPUS = sum(dict(zip(XPK["columns"], row, strict=True))["kind"] == "tpu" for row in XPK["rows"])
SUPER_SLICES = json.loads(
    (REPO / "tests" / "fixtures" / "xpk" / "dynamic_slicing.json").read_text()
)
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def default(setting: str) -> Any:
    return settings.SETTINGS[setting].parse(setting, settings.SETTINGS[setting].default)


def minutes(seconds: float) -> int:
    assert seconds % 60 == 0, seconds
    return int(seconds // 60)


@dataclass(frozen=True)
class Figure:
    """``phrase`` on ``page``, each ``{}`` filled in with the code's ``values``."""

    page: str
    phrase: str
    values: tuple[Any, ...]

    @property
    def shown(self) -> str:
        return self.phrase.format(*self.values)


def figure(page: str, phrase: str, *values: Any) -> Figure:
    return Figure(page, phrase, values)


FIGURES = [
    # concepts.md
    figure("concepts.md", "`<jobset>-<rjob>-0-0.<jobset>:{}`", DEFAULT_COORDINATOR_PORT),
    figure("concepts.md", "The coordinator port is {} unless", DEFAULT_COORDINATOR_PORT),
    figure("concepts.md", "and the MegaScale coordinator ({})", DEFAULT_MEGASCALE_PORT),
    figure(
        "concepts.md",
        "JobSet's name instead ({}–{})",
        SHARED_PORT_RANGE[0],
        SHARED_PORT_RANGE[1] - 1,
    ),
    figure("concepts.md", "all of xpk 1.16's {:,} TPU device types", XPK_TPUS),
    # index.md and the package's own requirements
    figure(
        "index.md",
        "The provider needs Airflow {} or later",
        re.search(r"apache-airflow>=([\d.]+)", str(PROJECT["project"]["dependencies"]))[1],
    ),
    figure("index.md", "Python {}+", PROJECT["project"]["requires-python"].removeprefix(">=")),
    # kubernetes.md
    figure("kubernetes.md", "when it fits ({} KiB)", TERMINATION_MESSAGE_LIMIT // KIB),
    figure(
        "kubernetes.md",
        "(default {} MiB: XComs live in the metadata database",
        default("max_result_bytes") // MIB,
    ),
    figure(
        "kubernetes.md",
        "(at most {} minutes, then a clear error naming its finalizers)",
        minutes(GONE_TIMEOUT_S),
    ),
    figure("kubernetes.md", "stream into the task log, up to {:,} of each", WATCH.log_lines),
    figure(
        "kubernetes.md",
        "fires no sooner than {:g} s after the deferral",
        default("resume_settle_seconds"),
    ),
    figure("kubernetes.md", "that alarm is moved to {:g} s past the deadline", BACKSTOP_S),
    figure(
        "kubernetes.md",
        "`activeDeadlineSeconds` of `execution_timeout` plus {} s",
        CLUSTER_DEADLINE_GRACE_S,
    ),
    figure(
        "kubernetes.md",
        "({}, {}, {}, {} s after it starts, then every {}",
        *itertools.accumulate(CHECK_DELAYS),
        {60: "minute"}[CHECK_EVERY],
    ),
    figure("kubernetes.md", "at its first list and then every {}", {60: "minute"}[SWEEP_EVERY_S]),
    figure(
        "kubernetes.md", "up to the retry budget ({} minutes)", WORDS[minutes(WATCH.retry_budget)]
    ),
    figure(
        "kubernetes.md",
        "one long-lived `watch` request about every {} minutes",
        WORDS[minutes(WATCH_TIMEOUT)],
    ),
    figure("kubernetes.md", "At most {} streams are being opened", MAX_OPENING),
    figure("kubernetes.md", "comes in pages of {} JobSets", LIST_PAGE_SIZE),
    figure(
        "kubernetes.md",
        "`[jax] max_log_streams` streams at once (default {:,})",
        default("max_log_streams"),
    ),
    figure("kubernetes.md", "one request per queue every {:g} s", POSITION_EVERY),
    figure("kueue.md", "one visibility request per LocalQueue every {:g} s", POSITION_EVERY),
    figure("kueue.md", "(the cluster's, `execution_timeout` + {} s)", CLUSTER_DEADLINE_GRACE_S),
    # operators.md
    figure(
        "operators.md",
        "at most {:,} per host per try (and {:,} progress lines), each cut at {:,} characters",
        WATCH.log_lines,
        WATCH.log_lines,
        MAX_LINE,
    ),
    figure(
        "operators.md",
        "`[jax] max_log_streams` streams at once (default {:,},",
        default("max_log_streams"),
    ),
    figure("operators.md", "{} lines each, up to {} hosts", SUMMARY_LINES, SUMMARY_HOSTS),
    figure(
        "operators.md",
        "(`{}`) or path (`{}`)",
        local_checkpoints.VOLUME,
        local_checkpoints.MOUNT_PATH,
    ),
    # runtime.md
    figure(
        "runtime.md",
        "a termination message (at most {} bytes, Kubernetes' limit)",
        TERMINATION_MESSAGE_LIMIT,
    ),
    figure("runtime.md", "then at most one every {:g} s of the job's clock", SHOW_EVERY_S),
    figure(
        "runtime.md",
        "The runtime prints at most {} lines a second",
        WORDS[round(1 / inspect.signature(reports.Reporter).parameters["interval"].default)],
    ),
    figure("runtime.md", "at most {:,} progress lines per Airflow try", WATCH.log_lines),
    # recovery.md
    figure("recovery.md", "`max_restarts` (default {})", DEFAULT_MAX_RESTARTS),
    figure(
        "recovery.md",
        "exit codes `NotIn` {{{}, {}, 129–255}}",
        exits.EXIT_DISRUPTED,
        exits.EXIT_HUNG,
    ),
    figure("recovery.md", "retry after {} minute |", minutes(DISRUPTION_DELAY.total_seconds())),
    figure("recovery.md", "retry after {} minutes |", minutes(CAPACITY_DELAY.total_seconds())),
    figure("recovery.md", "(`backoffLimit: {}`", in_place_restart.MAX_INT32),
    figure("recovery.md", "name `in-place-restart-agent:{}`", in_place_restart.AGENT_RELEASE),
    figure("recovery.md", "the restart `attempt` (the newest {})", MAX_PHASES),
    figure("recovery.md", "the process exits {} with the class `disruption`", exits.EXIT_SIGTERM),
    figure("recovery.md", "with the class `hang`, and exits {}", exits.EXIT_HUNG),
    # local-backend.md
    figure(
        "local-backend.md",
        "{:,} lines per process per try, each cut at {:,} characters",
        WATCH.log_lines,
        MAX_LINE,
    ),
    figure("local-backend.md", "is held back to {:g} s past the deadline", BACKSTOP_S),
    figure("local-backend.md", "trying every {}-second", {0.25: "quarter"}[coordinator.POLL]),
    figure("local-backend.md", "The waiting loop woke on a {:g} ms tick", _TICK_S * 1000),
    # capacity.md, elastic.md
    figure(
        "capacity.md",
        "for at most `capacity_wait` (default {} minutes)",
        minutes(DEFAULT_CAPACITY_WAIT_S),
    ),
    figure("capacity.md", "`capacity_wait` ({:g} s when not given)", DEFAULT_CAPACITY_WAIT_S),
    figure("capacity.md", "then run up to {} days", FLEX_START_MAX_RUN_S // 86400),
    figure("capacity.md", "`execution_timeout` longer than {} days", FLEX_START_MAX_RUN_S // 86400),
    figure("elastic.md", "(default {} minutes)", minutes(DEFAULT_SHRINK_AFTER_S)),
    # observability.md
    figure(
        "observability.md",
        "At most {} steps (a bigger trace is too big to open)",
        MAX_PROFILE_STEPS,
    ),
    figure("observability.md", "the last {:,} lines are kept", debug_dump.LOG_TAIL_LINES),
    figure("observability.md", "Each host sends at most {} MiB", debug_dump.CAP_BYTES // MIB),
    figure("observability.md", "The default, {} minutes, bounds", minutes(DEFAULT_WARN_AFTER)),
    figure("observability.md", "at most once a {}", {60: "minute"}[MAX_INTERVAL]),
    figure("observability.md", "`[jax] metrics_prefix` (default `{}`)", default("metrics_prefix")),
    # orbax-sensor.md, assets.md
    figure(
        "orbax-sensor.md", "exponential backoff and jitter ({} attempts)", RetryPolicy().attempts
    ),
    figure(
        "assets.md", "waits {:g} s for an earlier owner's in-flight event", TAKEOVER_SETTLE_SECONDS
    ),
    figure(
        "assets.md",
        "at the default `poll_interval={:g}`",
        inspect.signature(OrbaxCheckpointEventTrigger).parameters["poll_interval"].default,
    ),
    figure("assets.md", "under `{}<checkpoint_dir>`", stream.CURSOR_KEY_PREFIX),
    figure("assets.md", "under `{}<checkpoint_dir>`", stream.OWNER_KEY_PREFIX),
    figure("data.md", "`gs://<output_dir's bucket>/{}/<digest>/`", data_staging.STAGING_PREFIX),
    figure("data.md", "A marker object (`<digest>{}`", data_staging.COMPLETE),
    figure("data.md", "mounted read-only at `{}/<hash>`", data_inputs.FUSE_MOUNT_ROOT),
    # pathways.md
    figure(
        "pathways.md",
        "The IFRT proxy (port {}) and the resource manager ({}, {})",
        pathways.PROXY_PORT,
        pathways.RM_PORT,
        pathways.RM_SECOND_PORT,
    ),
    figure("pathways.md", "(ports {}, {}, {}, {})", *pathways.WORKER_PORTS),
    figure("pathways.md", "| `server_image` | `{}` |", pathways.DEFAULT_SERVER_IMAGE),
    figure("pathways.md", "| `proxy_image` | `.../pathways/proxy_server:{}` |", pathways.JAX_TAG),
    figure("pathways.md", "| `elastic_slices` | `{}` |", pathways.Pathways().elastic_slices),
    figure(
        "pathways.md", "| `max_slice_restarts` | `{}` |", pathways.Pathways().max_slice_restarts
    ),
    figure(
        "pathways.md",
        "| `head_node_selector` | `{}` |",
        json.dumps(pathways.DEFAULT_HEAD_NODE_SELECTOR),
    ),
    figure("pathways.md", "tested with ({})", pathways.JAX_TAG.removeprefix("jax-")),
    # decorators.md, data.md
    figure(
        "decorators.md",
        "each under Linux's {} KiB limit for one string, up to {} KiB compressed",
        (MAX_ENV_STRING + 1) // KIB,
        MAX_COMPRESSED_BYTES // KIB,
    ),
    figure("data.md", "{} objects at a time", DOWNLOAD_THREADS),
    figure("data.md", "or above {} GiB, once the task runs", data_staging.MAX_STAGED_BYTES // GIB),
    figure("data.md", "Folders above {} GiB are refused", data_staging.MAX_STAGED_BYTES // GIB),
    # ironwood.md, multicluster.md
    figure(
        "ironwood.md", "with i ≤ j ≤ k and at most {} cubes", GENERATIONS["tpu7x"].shapes.max_cubes
    ),
    figure("ironwood.md", "more than {} cubes", GENERATIONS["tpu7x"].shapes.max_cubes),
    figure(
        "ironwood.md",
        "all {} super-slice shapes in xpk's table at 1 and 2 slices ({:,} JobSets)",
        len(SUPER_SLICES["cases"]) // 2,
        len(SUPER_SLICES["cases"]),
    ),
    figure("ironwood.md", "which is xpk's {} in `default`", SUPER_SLICES["name_limit"]),
    figure("ironwood.md", "the tests run {}", VERSIONS["KUEUE_VERSION"]),
    figure(
        "multicluster.md",
        "tested with JobSet {} and Kueue {}",
        VERSIONS["JOBSET_VERSION"],
        VERSIONS["KUEUE_VERSION"],
    ),
    # security.md, troubleshooting.md, programs.md
    figure("security.md", "a report line over {} KiB is not parsed", MAX_REPORT_CHARS // KIB),
    figure(
        "security.md",
        "`[jax] max_result_bytes` (default {} MiB)",
        default("max_result_bytes") // MIB,
    ),
    figure("troubleshooting.md", "such a job fails (exit code {})", NOT_JOINED_EXIT),
    figure("programs.md", "(exit code {}, a code error", NOT_JOINED_EXIT),
]


@pytest.mark.parametrize("fact", FIGURES, ids=[f"{f.page}:{f.phrase[:40]}" for f in FIGURES])
def test_a_figure_on_a_page_is_the_codes(fact: Figure):
    assert fact.shown in prose(fact.page), (
        f"docs/{fact.page} should say {fact.shown!r}: the code's value, or the page, changed"
    )


def every(pattern: str, flags: int = 0) -> dict[str, list[str]]:
    """Each match of ``pattern``'s first group on any page -> the pages it is on."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for match in re.findall(pattern, page.read_text(), flags):
            name = "".join(match) if isinstance(match, tuple) else match  # one group matched
            found.setdefault(name, []).append(page.name)
    return found


def source_text(*folders: str) -> str:
    return "\n".join(
        p.read_text()
        for folder in ("airflow_provider_jax", *folders)
        for p in (REPO / folder).rglob("*.py")
    )


def callables() -> list[Callable[..., Any]]:
    """What a DAG passes ``name=`` to: the operators and decorators, the sensor and triggers,
    the values, and Airflow's own operator and sensor; and what a contributor declares an
    operator argument with (docs/architecture.md's recipe)."""
    from airflow.sdk import BaseOperator, BaseSensorOperator

    from airflow_provider_jax import Data, Pathways, SecretRef, Storage
    from airflow_provider_jax.operators import (
        JaxGpuJobOperator,
        JaxRetryPolicy,
        JaxTpuSliceOperator,
    )
    from airflow_provider_jax.operators.job_arguments import argument
    from airflow_provider_jax.operators.job_operator import JaxJobOperator
    from airflow_provider_jax.sensors import OrbaxCheckpointSensor

    return [
        JaxJobOperator, JaxTpuSliceOperator, JaxGpuJobOperator, JaxRetryPolicy,
        OrbaxCheckpointSensor, OrbaxCheckpointEventTrigger, Data, Pathways, SecretRef, Storage,
        BaseOperator, BaseSensorOperator, argument,
    ]  # fmt: skip


# `name=` on a page that is no argument of ours or Airflow's: Airflow's DAG (schedule=), GCS's
# list call (delimiter=), kubectl (dryRun=), Orbax (allow_legacy...), the stdlib and the
# configs that pages quote.
NOT_ARGUMENTS = {
    "schedule", "delimiter", "dryRun", "spec", "start", "start_new_session", "allow_legacy_atomic_rename",
    "outlets", "multiple_outputs", "kind", "read_only", "fuse", "metadata_prefetch",
}  # fmt: skip


def test_every_argument_a_page_names_is_one():
    parameters = {
        name for c in callables() for name in inspect.signature(c).parameters if name != "kwargs"
    }
    named = every(r"`(\w+)=")
    unknown = {
        name: pages
        for name, pages in named.items()
        if not name.isupper() and name not in parameters and name not in NOT_ARGUMENTS
    }
    assert not unknown, f"named as arguments, but no callable takes them: {unknown}"


def test_every_setting_a_page_names_is_one():
    named = every(r"\[jax\]\s+(\w+)")
    misspelt_on_purpose = {"metric_prefix"}  # observability.md: "a misspelt setting such as"
    unknown = set(named) - set(settings.SETTINGS) - misspelt_on_purpose - {"settings", "section"}
    assert not unknown, {name: named[name] for name in unknown}
    assert "misspelt setting such as `[jax] metric_prefix`" in prose("observability.md")


def test_every_module_and_make_target_a_page_names_exists():
    for module, pages in every(r"python -m ([\w.]+)").items():
        path = REPO / module.replace(".", "/")
        assert path.with_suffix(".py").is_file() or (path / "__main__.py").is_file(), (
            module,
            pages,
        )
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    for target, pages in every(r"`make ([\w-]+)").items():
        assert target in targets, (target, pages)


def test_every_file_a_page_names_in_this_repository_exists():
    roots = (
        "airflow_provider_jax",
        "tests",
        "harness",
        "bench",
        "tools",
        "dags",
        "scripts",
        "docker",
    )
    package = REPO / "airflow_provider_jax"
    folders = [REPO, package, *(p for p in package.rglob("*") if p.is_dir())]
    for name, pages in every(r"`([\w./-]+\.(?:py|json|yaml|sh))`").items():
        if name.partition("/")[0] in roots:  # a folder of this repository, not a prefix
            assert (REPO / name).exists(), (name, pages)
        elif "/" in name and not name.startswith(
            ("xpk/", "src/", "orbax/", "models/", "site/", "keps/", "gpudirect", "doc/")
        ):
            assert any((folder / name).exists() for folder in folders), (name, pages)


def test_every_xcom_key_a_page_names_is_pushed():
    keys = {"return_value"}  # Airflow's own
    for path in (REPO / "airflow_provider_jax").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and "XCOM_KEY" in ast.unparse(node.targets[0]):
                keys |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
    named = every(r"XCom `(\w+)`|`(\w+)` XCom")
    assert len(named) >= 5 and set(named) <= keys, {k: named[k] for k in set(named) - keys}


def test_every_provider_key_and_variable_a_page_names_is_the_codes():
    source = source_text()
    for key, pages in every(r"`(jax\.airflow\.apache\.org/[\w.-]+)`").items():
        assert key.removeprefix("jax.airflow.apache.org/") in source, (key, pages)
    harness = source_text("harness")  # the test cluster's own settings (testing.md)
    for name, pages in every(r"\b(AIRFLOW_JAX_[A-Z_]+)\b").items():
        assert name in (harness if pages == ["testing.md"] else source), (name, pages)


def test_every_runtime_call_a_page_names_exists():
    named = every(r"\bruntime\.(\w+)\(")
    missing = {name: pages for name, pages in named.items() if not hasattr(runtime, name)}
    assert named and not missing, missing


def test_the_layers_on_the_architecture_page_are_the_import_contracts():
    (contract,) = [c for c in PROJECT["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    layers = [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]
    rows = re.findall(
        r"^\| ((?:`\w+`(?:, )?)+)(?: \(pure\))? \| ",
        (REPO / "docs" / "architecture.md").read_text(),
        re.M,
    )
    shown = [set(re.findall(r"`(\w+)`", row)) for row in rows]
    assert shown == layers


def names_in(page: str, start: str, end: str) -> list[str]:
    """The backticked names of ``page`` between ``start`` and the next ``end``."""
    text = prose(page)
    begin = text.index(start) + len(start)
    return re.findall(r"`([^`]+)`", text[begin : text.index(end, begin)])


def test_the_lists_a_page_gives_are_the_codes():
    from airflow_provider_jax.contract.backend import ON_FINISH_ACTIONS
    from airflow_provider_jax.decorators.jax_job import CONTEXT_KEYS
    from airflow_provider_jax.manifest.capacity import TOPOLOGY_LEVELS
    from airflow_provider_jax.manifest.pod_override import MERGE_KEYS

    assert names_in("decorators.md", "a function asks for by name (", ")") == list(CONTEXT_KEYS)
    text = prose("operators.md")
    merging = text[
        text.index("merge by their Kubernetes merge key:") : text.index(
            "The provider's entries stay"
        )
    ]
    merge_keys = {
        field: key
        for fields, key in re.findall(r"((?:`\w+`(?:, | and )?)+) by `(\w+)`", merging)
        for field in re.findall(r"`(\w+)`", fields)
    }
    assert merge_keys == MERGE_KEYS
    finish = names_in("kubernetes.md", "`on_finish_action` then applies:", ". The result")
    assert finish == list(ON_FINISH_ACTIONS)
    levels = names_in("capacity.md", "Levels:", "It matters")
    assert dict(zip(levels[::2], levels[1::2], strict=True)) == TOPOLOGY_LEVELS


def test_the_settings_table_says_what_the_declaration_says():
    """tests/test_settings.py holds the defaults; here the kind and the description too."""
    rows = re.findall(
        r"^\| `(\w+)` \| ([^|]+) \| [^|]+ \| (.+) \|$",
        (REPO / "docs" / "settings.md").read_text(),
        re.M,
    )
    assert {key for key, _, _ in rows} == set(settings.SETTINGS)
    for key, kind, what in rows:
        setting = settings.SETTINGS[key]
        # default_backend's values are the backend registry's, checked where a task resolves it
        allowed = BACKENDS if key == "default_backend" else setting.choices
        choices = " or ".join(f"`{c}`" for c in allowed)
        assert kind.strip() == (choices or setting.kind), key
        assert what.strip() == setting.description, key
