"""Kubernetes' own syntax rules for what a user hands us to put in a pod or JobSet: label keys
and values, annotations, object and namespace names, resource names and quantities,
tolerations, the image pull policy. Checked here, with the argument's name in the message, so
a bad value fails at parse (or once rendered) instead of as a 422 from the API server after
the task has started, or never (a label the API server accepts but Kueue cannot use).

The rules are apimachinery's (``k8s.io/apimachinery/pkg/util/validation``) and
``k8s.io/kubernetes/pkg/apis/core/validation``: IsQualifiedName, IsValidLabelValue,
IsDNS1123Label/Subdomain, ValidateAnnotations (256 KiB in all), the Quantity grammar, and
validateTolerations. Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_jax.arguments import one_of

_NAME_PART = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = re.compile(f"^{_NAME_PART}$")
_LABEL_VALUE = re.compile(f"^({_NAME_PART})?$")
_DNS1123_LABEL = re.compile(f"^{_DNS_LABEL}$")
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
# A Quantity: a non-negative decimal with a binary (Ki..Ei), decimal (n..E) or exponent suffix.
_QUANTITY = re.compile(r"^\+?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
ANNOTATIONS_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
RESOURCE_KINDS = ("limits", "requests")


def dns1123_label(argument: str, value: object) -> str:
    """A namespace (or any DNS-1123 label): at most 63 lowercase letters, digits and '-'."""
    return _dns_name(argument, value, _DNS1123_LABEL, 63, "label", " and '-'")


def dns1123_subdomain(argument: str, value: object) -> str:
    """An object name such as a service account or PriorityClass: at most 253 characters."""
    return _dns_name(argument, value, _DNS1123_SUBDOMAIN, 253, "subdomain", ", '-' and '.'")


def _dns_name(
    argument: str, value: object, pattern: re.Pattern[str], limit: int, kind: str, marks: str
) -> str:
    if not isinstance(value, str) or len(value) > limit or not pattern.fullmatch(value):
        raise ValueError(
            f"{argument} must be a DNS-1123 {kind} (at most {limit} lowercase letters, "
            f"digits{marks}, starting and ending with a letter or digit), got {value!r}."
        )
    return value


def qualified_name(argument: str, value: object) -> str:
    """A label or annotation key, or a resource name: ``[prefix/]name``, the name at most 63
    characters, the optional prefix a DNS-1123 subdomain."""
    ok = False
    if isinstance(value, str):
        prefix, _, name = value.rpartition("/")
        ok = len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(name))
        if ok and "/" in value:
            ok = 0 < len(prefix) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(prefix))
    if not ok or not isinstance(value, str):
        raise ValueError(
            f"{argument} key {value!r} is not a qualified name: [prefix/]name, the name at most "
            "63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, "
            "and the prefix a DNS subdomain such as 'example.com'."
        )
    return value


def label_value(argument: str, value: object) -> str:
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(
            f"{argument} value {value!r} is not a valid label value: a string of at most 63 "
            "letters, digits, '-', '_' and '.', starting and ending with a letter or digit "
            "(or empty)."
        )
    return value


def labels(argument: str, values: Mapping[Any, Any]) -> None:
    """Label (or node selector) keys and values."""
    for key, value in values.items():
        qualified_name(argument, key)
        label_value(f"{argument}[{key!r}]", value)


def annotation_values(argument: str, values: Mapping[Any, Any]) -> None:
    """Annotation keys are qualified names; values are strings, 256 KiB in all."""
    total = 0
    for key, value in values.items():
        qualified_name(argument, key)
        if not isinstance(value, str):
            raise ValueError(
                f"{argument}[{key!r}] must be a string, got {type(value).__name__} {value!r}: "
                "Kubernetes keeps annotations as strings (json.dumps it if it is structured)."
            )
        total += len(key) + len(value)
    if total > ANNOTATIONS_LIMIT:
        raise ValueError(
            f"{argument} are {total} bytes; Kubernetes allows {ANNOTATIONS_LIMIT} in all. Put "
            "large data in output_dir or GCS, and its path in the annotation."
        )


def image_pull_policy(value: object) -> None:
    if value is not None:
        one_of("image_pull_policy", value, PULL_POLICIES)


def container_resources(values: Mapping[Any, Any]) -> None:
    """``{"limits"|"requests": {resource name: quantity}}``, as a container's ``resources``."""
    for kind, amounts in values.items():
        if kind not in RESOURCE_KINDS:
            raise ValueError(
                f"container_resources keys must be {RESOURCE_KINDS}, got {kind!r}: e.g. "
                "{'requests': {'cpu': '8', 'memory': '32Gi'}}."
            )
        if not isinstance(amounts, Mapping):
            raise ValueError(
                f"container_resources[{kind!r}] must map resource names to quantities, got "
                f"{amounts!r}."
            )
        for resource, amount in amounts.items():
            argument = f"container_resources[{kind!r}]"
            qualified_name(argument, resource)
            standard = resource in _STANDARD_RESOURCES or resource.startswith("hugepages-")
            if "/" not in resource and not standard:
                raise ValueError(
                    f"{argument}: {resource!r} is not a container resource: use one of "
                    f"{_STANDARD_RESOURCES}, hugepages-<size>, or a prefixed name such as "
                    "'nvidia.com/gpu'."
                )
            quantity(f"{argument}[{resource!r}]", amount)


_BINARY_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIX = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9,
                   "T": 1e12, "P": 1e15, "E": 1e18}  # fmt: skip


def quantity(argument: str, value: object) -> None:
    """A resource amount: a finite number >= 0 or a Quantity string (no whitespace, no
    trailing newline: the API server refuses both)."""
    number = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
    if not number and not (isinstance(value, str) and _QUANTITY.fullmatch(value)):
        raise ValueError(
            f"{argument} must be a non-negative Kubernetes quantity such as '8', '500m', "
            f"'32Gi' or '1e3', got {value!r}."
        )


def byte_size(argument: str, value: object, *, unit_required: bool = True) -> float:
    """A size in bytes from a Quantity string: the one parser of every size the provider
    reads. Where ``unit_required``, a bare number is refused, since Kubernetes reads ``'64'``
    as 64 bytes, rarely what was meant."""
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    suffix = (match.group(3) or "") if match else ""
    bare = suffix == "" or suffix[0] in "eE"
    if not match or suffix in ("n", "u", "m") or (bare and unit_required):
        hint = ""
        if match and not suffix:
            hint = f" ({value!r} is {value} bytes; did you mean '{value}Gi'?)"
        raise ValueError(
            f"{argument} must be a positive Kubernetes memory quantity with its unit, such as "
            "'64Gi' "
            f"or '500M', got {value!r}{hint}."
        )
    if bare:
        scale = 10 ** int(suffix[1:]) if suffix else 1
    else:
        scale = _BINARY_SUFFIX.get(suffix) or _DECIMAL_SUFFIX[suffix]
    size = float(match.group(1)) * scale
    if size < 1:
        raise ValueError(f"{argument} must be a positive size, at least one byte, got {value!r}.")
    return size


def tolerations(values: Sequence[Any], where: str = "tolerations") -> None:
    for i, toleration in enumerate(values):
        argument = f"{where}[{i}]"
        if not isinstance(toleration, Mapping):
            raise ValueError(f"{argument} must be a mapping, got {toleration!r}.")
        if unknown := sorted(set(toleration) - set(TOLERATION_FIELDS)):
            raise ValueError(f"{argument} has unknown fields {unknown}; use {TOLERATION_FIELDS}.")
        operator = toleration.get("operator", "Equal")
        one_of(f"{argument}.operator", operator, TOLERATION_OPERATORS)
        if toleration.get("key"):
            qualified_name(f"{argument}.key", toleration["key"])
        elif operator != "Exists":
            raise ValueError(f"{argument}: operator must be 'Exists' when key is empty.")
        value = toleration.get("value", "")
        if operator == "Exists" and value:
            raise ValueError(f"{argument}: value must be empty when operator is 'Exists'.")
        label_value(f"{argument}.value", value)
        effect = toleration.get("effect", "")
        one_of(f"{argument}.effect", effect, TOLERATION_EFFECTS)
        if (seconds := toleration.get("tolerationSeconds")) is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, int):
                raise ValueError(f"{argument}.tolerationSeconds must be an integer.")
            if effect != "NoExecute":
                raise ValueError(f"{argument}: tolerationSeconds needs effect 'NoExecute'.")


MAX_ID = 2**31 - 1  # a uid or gid: validation's "must be between 0 and 2147483647"
_ID_FIELDS = ("runAsUser", "runAsGroup")
# A volume's one source: every field of core/v1 Volume but its name.
VOLUME_SOURCE_EXCLUDED = ("name",)


def security_context(argument: str, context: Mapping[str, Any]) -> None:
    """What ``ValidateSecurityContext`` refuses beyond the types: ids outside 0..2^31-1, and a
    privileged container (or one adding CAP_SYS_ADMIN) that may not escalate privileges."""
    for field in _ID_FIELDS:
        value = context.get(field)
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if is_int and not 0 <= value <= MAX_ID:  # type: ignore[operator]
            raise ValueError(f"{argument}.{field} must be between 0 and {MAX_ID}, got {value}.")
    if context.get("allowPrivilegeEscalation") is False:
        added = (context.get("capabilities") or {}).get("add") or ()
        if context.get("privileged") is True or {"SYS_ADMIN", "CAP_SYS_ADMIN"} & set(added):
            raise ValueError(
                f"{argument}: a privileged container (or one adding SYS_ADMIN) always may "
                "escalate its privileges, so allowPrivilegeEscalation=False contradicts it "
                "(Kubernetes refuses the pod): drop one of the two."
            )


def volume_source(argument: str, volume: Mapping[str, Any]) -> None:
    """A volume has exactly one source (``emptyDir``, ``persistentVolumeClaim``, ...)."""
    sources = sorted(k for k in volume if k not in VOLUME_SOURCE_EXCLUDED)
    if len(sources) != 1:
        raise ValueError(
            f"{argument} {volume.get('name')!r} must have exactly one source (emptyDir, "
            f"persistentVolumeClaim, csi, ...), got {sources or 'none'}."
        )


def non_negative_int(argument: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{argument} must be an integer >= 0 (seconds), got {value!r}.")


# Where a mount would hide what the image or the kubelet put there.
SYSTEM_PATHS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/sbin", "/sys",
                "/usr", "/var/run/secrets/kubernetes.io")  # fmt: skip


def volumes(volumes: Sequence[Mapping[str, Any]], mounts: Sequence[Mapping[str, Any]]) -> None:
    """Volume names are unique DNS labels; mounts are at distinct absolute paths that hide no
    system folder."""
    names: set[str] = set()
    for volume in volumes:
        name = dns1123_label("volumes name", volume.get("name"))
        if name in names:
            raise ValueError(f"volumes name {name!r} is used twice; each volume needs its own.")
        names.add(name)
    paths: dict[str, str] = {}
    for mount in mounts:
        path, mounted = mount.get("mountPath"), mount.get("name")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"volume_mounts mountPath must be an absolute path, got {path!r}.")
        normal = "/" + path.strip("/")
        if normal in SYSTEM_PATHS:
            raise ValueError(
                f"volume_mounts mountPath {path!r} would hide the system folder {normal!r}; "
                "mount data under its own folder, e.g. /data."
            )
        if normal in paths:
            raise ValueError(
                f"volume_mounts: {paths[normal]!r} and {mounted!r} are both mounted at {normal!r}; "
                "give each its own mountPath."
            )
        paths[normal] = str(mounted)
        if mounted not in names:
            raise ValueError(
                f"volume_mounts names the volume {mounted!r}, which is not declared (volumes: "
                f"{sorted(names)}); add it to volumes= or pod_template_override's spec.volumes."
            )
