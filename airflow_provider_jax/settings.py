"""The ``[jax]`` settings: each declared once, with its type, default and check. The provider's
config section (``get_provider_info``), every read and every check come from here.

A key that is not declared gets "did you mean" (``local_accelerator`` would otherwise be
ignored without a word), and a value is checked when the section is first read in a process
(a DAG's parse, a worker's task, the triggerer): a URL template with an unknown placeholder,
or ``CPU`` for ``cpu``, is refused before any task runs. Pure but for :func:`get`, which
reads Airflow's config lazily.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.arguments import did_you_mean, image_reference

SECTION = "jax"


@dataclass(frozen=True)
class Setting:
    """One ``[jax]`` key.

    :param kind: ``string``, ``integer`` or ``float`` (Airflow's config types).
    :param default: its value when unset, as the config file writes it.
    :param description: what it does, for the provider's config section.
    :param example: a value, for the config section.
    :param choices: the only values allowed, compared exactly.
    :param check: further checks of a set value (raises ValueError without the key's name).
        An empty value is "unset" only where the default is empty too: elsewhere it is a
        value, and checked (an empty ``metrics_prefix`` is no StatsD name).
    """

    kind: str
    default: str
    description: str
    example: str
    choices: tuple[str, ...] = ()
    check: Callable[[str], None] | None = None

    def parse(self, key: str, raw: str) -> Any:
        """``raw`` as this setting's type, or a ValueError naming ``[jax] key``."""
        where = f"[{SECTION}] {key}"
        if raw != raw.strip():
            raise ValueError(f"{where} = {raw!r} has whitespace around it; remove it.")
        if self.choices and raw not in self.choices:
            raise ValueError(
                f"{where} must be one of {self.choices}, got {raw!r}{did_you_mean(raw, self.choices)}."
            )
        value: Any = raw
        if self.kind in ("integer", "float"):
            try:
                value = int(raw) if self.kind == "integer" else float(raw)
            except ValueError:
                raise ValueError(f"{where} must be an {self.kind}, got {raw!r}.") from None
            if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"{where} must be a finite number >= 0, got {raw!r}.")
        if self.check is not None and (raw or self.default):
            try:
                self.check(raw)
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
        return value


def url_template(placeholders: tuple[str, ...]) -> Callable[[str], None]:
    """A URL whose ``{...}`` fields are exactly among ``placeholders``."""

    def check(raw: str) -> None:
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(raw) if f is not None]
        except ValueError as err:
            raise ValueError(f"{raw!r} is not a valid template ({err}).") from None
        if unknown := sorted({f for f in fields if f not in placeholders}):
            raise ValueError(
                f"{raw!r} has the placeholder(s) {unknown}; the only one filled in is "
                f"{', '.join('{' + p + '}' for p in placeholders)}."
            )
        if not re.fullmatch(r"https?://\S+", raw):
            raise ValueError(f"{raw!r} is not an http(s) URL.")
        try:  # a format spec or conversion ({output_dir:d}, {output_dir!x}) fails only here
            raw.format(**dict.fromkeys(placeholders, "gs%3A%2F%2Fbucket%2Frun"))
        except (ValueError, TypeError, IndexError, KeyError) as err:
            raise ValueError(f"{raw!r} can't be filled in: {err}.") from None

    return check


def container_image(raw: str) -> None:
    image_reference("the image", raw)


def absolute_path(raw: str) -> None:
    if not raw.startswith("/"):
        raise ValueError(f"{raw!r} is not an absolute path.")


STATSD_NAME = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")  # StatsD's, dot-separated


def statsd_name(raw: str) -> None:
    if not STATSD_NAME.fullmatch(raw):
        raise ValueError(
            f"{raw!r} is not a StatsD name: letters, digits, '_' and '-', parts joined by '.'."
        )


SETTINGS: dict[str, Setting] = {
    "default_backend": Setting(
        "string",
        "kubernetes",
        "Where JAX jobs run when an operator names no backend: ``kubernetes`` submits a JobSet, "
        "``local`` runs the same JobSet as local processes with JAX on the CPU. Checked against "
        "the backends the provider has (contract/backend.py) where a task resolves it.",
        "local",
    ),
    "default_image": Setting(
        "string",
        "",
        "The image a JAX task runs when it names none (its image= argument). Unset: "
        "Kubernetes tasks must name one; the local backend needs none.",
        "us-docker.pkg.dev/my-project/training/jax:latest",
        check=container_image,
    ),
    "max_result_bytes": Setting(
        "integer",
        "1048576",
        "The largest leader result read into XCom, in bytes. Results live in the metadata "
        "database; write large outputs to output_dir and return their paths.",
        "65536",
    ),
    "local_secrets_dir": Setting(
        "string",
        "",
        "Where the local backend reads the Kubernetes Secrets a job references (secrets=): "
        "<dir>/<secret>/<key> files, as a Secret volume lays them out. Unset: referencing a "
        "Secret locally is an error.",
        "/run/secrets/jax",
    ),
    "local_accelerators": Setting(
        "string",
        "auto",
        "What the local backend's processes compute on. ``auto``: a GPU job's processes get "
        "this machine's NVIDIA GPUs (gpus_per_node each, by CUDA_VISIBLE_DEVICES) when it has "
        "enough, and the CPU stands in when it has none. ``cpu``: the CPU always stands in. "
        "TPU jobs always run on the CPU locally.",
        "cpu",
        choices=("auto", "cpu"),
    ),
    "local_capacity_file": Setting(
        "string",
        "",
        "A JSON file the local backend reads as its TPU capacity, for drills and benches of "
        'elastic slices (min_slices): {"slices": 1} takes every slice from the second on '
        "away (their processes are killed, and they do not start again) until the file gives "
        "them back. Unset: every slice has capacity.",
        "/tmp/jax-capacity.json",
        check=absolute_path,
    ),
    "resume_settle_seconds": Setting(
        "float",
        "10",
        "A deferred task's trigger fires no sooner than this after the task deferred: Airflow "
        "3.3 fails a try resumed before the scheduler saw its worker exit on defer() "
        "(apache/airflow#72716). 0 where no scheduler runs the task (airflow dags test).",
        "0",
    ),
    "max_log_streams": Setting(
        "integer",
        "1000",
        "The most pod log streams one triggerer (or one blocking task) holds open at once. "
        "Each holds a connection, its TLS read buffer and a long-lived API server request. "
        "Past it, a job's log waits its turn, and a job that ends first shows its last lines. "
        "0: only the last lines, at each job's end.",
        "200",
    ),
    "tensorboard_url": Setting(
        "string",
        "",
        "Your TensorBoard (or XProf) URL for a run's output_dir, with {output_dir} where the "
        "URL-quoted directory goes. A task whose output_dir holds TensorBoard event files when "
        "it succeeds gets a TensorBoard link, and a profile_steps task a JAX profile link. "
        "Unset: no link, and no listing.",
        "https://tensorboard.example.com/?logdir={output_dir}",
        check=url_template(("output_dir",)),
    ),
    "metrics_prefix": Setting(
        "string",
        "jax",
        "The prefix of the provider's metrics, under Airflow's own [metrics] prefix.",
        "training",
        check=statsd_name,
    ),
    "in_place_restart_agent_image": Setting(
        "string",
        "",
        "JobSet's in-place restart agent image, for restart_strategy='in_place' when the "
        "Kubernetes connection's extra names none (docs/recovery.md).",
        "us-docker.pkg.dev/my-project/jobset/in-place-restart-agent:v0.12.0",
        check=container_image,
    ),
}


def check_section(section: Mapping[str, str]) -> dict[str, Any]:
    """Every key of a ``[jax]`` section declared, and every value valid: the parsed values,
    or a ValueError naming the key (an unknown one with the nearest declared name)."""
    values = {}
    for key, raw in section.items():
        setting = SETTINGS.get(key)
        if setting is None:
            raise ValueError(
                f"[{SECTION}] {key} is not a setting of the JAX provider{did_you_mean(key, SETTINGS)}; "
                f"the settings are {sorted(SETTINGS)}."
            )
        values[key] = setting.parse(key, str(raw))
    return values


def _section() -> dict[str, Any]:
    from airflow.sdk import conf

    return _checked(tuple(sorted((k, str(v)) for k, v in (conf.getsection(SECTION) or {}).items())))


@functools.cache
def _checked(items: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The section's values, checked once for each content it has had in this process."""
    return check_section(dict(items))


def get(key: str) -> Any:
    """``[jax] key``, the whole section checked the first time a process reads it as it is."""
    setting = SETTINGS[key]
    values = _section()
    return values[key] if key in values else setting.parse(key, setting.default)


def check() -> None:
    """Check the whole ``[jax]`` section now (at a DAG's parse), once a process."""
    _section()


def config_section() -> dict[str, Any]:
    """The ``[jax]`` section as Airflow's ``get_provider_info`` declares it."""
    return {
        "description": "Defaults for the JAX provider.",
        "options": {
            key: {
                "description": s.description,
                "version_added": "0.1.0",
                "type": s.kind,
                "example": s.example,
                "default": s.default,
            }
            for key, s in SETTINGS.items()
        },
    }
