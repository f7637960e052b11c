"""Kubernetes Secrets by reference: what ``secrets=`` takes, and how it reaches a pod.

A secret's value never enters the JobSet, the rendered fields, the task log or XCom: the
manifest names the Secret and the kubelet (or the local backend) resolves it inside the
process. ``SecretRef`` spells what the cncf provider's ``Secret`` spells, so KPO users can pass
either, without this module importing ``kubernetes`` at DAG parse.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


@dataclass(frozen=True)
class SecretRef:
    """One Kubernetes Secret, as an env var, every key as env vars, or a read-only volume.

    :param deploy_type: ``"env"`` or ``"volume"``.
    :param deploy_target: the env var's name (with ``key``), None for every key as env vars
        (``envFrom``), or the volume's mount path.
    :param secret: the Secret's name, in the job's namespace.
    :param key: the Secret's key for one env var (or, for a volume, the only key to mount).
    :param items: for a volume, ``[{"key": ..., "path": ...}]`` to mount some keys only.
    """

    deploy_type: str
    deploy_target: str | None
    secret: str
    key: str | None = None
    items: Sequence[Mapping[str, str]] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        where = f"secret {self.secret!r}"
        if not isinstance(self.secret, str) or not _SECRET_NAME.fullmatch(self.secret):
            raise ValueError(f"{where}: not a valid Secret name (a DNS-1123 subdomain).")
        if self.key is not None and not _KEY.fullmatch(str(self.key)):
            raise ValueError(f"{where}: key {self.key!r} is not a valid Secret key.")
        if self.deploy_type == "env":
            if self.items:
                raise ValueError(f"{where}: items only apply to volumes.")
            if self.deploy_target is None and self.key is not None:
                raise ValueError(f"{where}: an env secret with a key needs deploy_target.")
            if self.deploy_target is not None and not _ENV_NAME.fullmatch(self.deploy_target):
                raise ValueError(f"{where}: {self.deploy_target!r} is not an env var name.")
            if self.deploy_target is not None and self.key is None:
                raise ValueError(
                    f"{where}: name the key for env var {self.deploy_target!r}, or leave "
                    "deploy_target None to expose every key."
                )
        elif self.deploy_type == "volume":
            if not isinstance(self.deploy_target, str) or not os.path.isabs(self.deploy_target):
                raise ValueError(f"{where}: a volume needs an absolute mount path.")
        else:
            raise ValueError(f"{where}: deploy_type must be 'env' or 'volume'.")

    @property
    def volume_name(self) -> str:
        return f"secret-{self.secret}".replace(".", "-")[:63].rstrip("-")

    def volume_items(self) -> list[dict[str, str]]:
        items = [dict(item) for item in self.items]
        if self.key and not items:
            items = [{"key": self.key, "path": self.key}]
        return items


def as_secret_refs(values: Iterable[Any]) -> tuple[SecretRef, ...]:
    """``SecretRef``s from ours or the cncf provider's ``Secret`` objects (read by attribute,
    so nothing imports ``kubernetes``); ``values`` is already a list (its kind's check)."""
    refs = []
    for i, value in enumerate(values):
        if isinstance(value, SecretRef):
            refs.append(value)
        elif all(hasattr(value, a) for a in ("deploy_type", "deploy_target", "secret", "key")):
            refs.append(
                SecretRef(
                    value.deploy_type,
                    value.deploy_target,
                    value.secret,
                    value.key,
                    tuple(getattr(value, "items", None) or ()),
                )
            )
        else:
            raise TypeError(
                f"secrets[{i}] must be a SecretRef or an airflow.providers.cncf.kubernetes."
                f"secret.Secret, got {type(value).__name__} {value!r}."
            )
    return tuple(refs)


def env_names(refs: Iterable[SecretRef]) -> set[str]:
    return {r.deploy_target for r in refs if r.deploy_type == "env" and r.deploy_target}


def render_env(refs: Iterable[SecretRef]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The container's ``env`` items and ``envFrom`` sources for ``refs``."""
    env, env_from = [], []
    for ref in refs:
        if ref.deploy_type != "env":
            continue
        if ref.deploy_target is None:
            env_from.append({"secretRef": {"name": ref.secret}})
        else:
            env.append(
                {
                    "name": ref.deploy_target,
                    "valueFrom": {"secretKeyRef": {"name": ref.secret, "key": ref.key}},
                }
            )
    return env, env_from


def secret_volumes(refs: Iterable[SecretRef]) -> list[dict[str, Any]]:
    """The pod's ``volumes`` for the volume ``refs``."""
    volumes = []
    for ref in refs:
        if ref.deploy_type == "volume":
            source: dict[str, Any] = {"secretName": ref.secret}
            if items := ref.volume_items():
                source["items"] = items
            volumes.append({"name": ref.volume_name, "secret": source})
    return volumes


def secret_mounts(refs: Iterable[SecretRef]) -> list[dict[str, Any]]:
    """The container's read-only ``volumeMounts`` for the volume ``refs``."""
    return [
        {"name": ref.volume_name, "mountPath": ref.deploy_target, "readOnly": True}
        for ref in refs
        if ref.deploy_type == "volume"
    ]
