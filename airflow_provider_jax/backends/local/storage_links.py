"""``storage=`` on the local backend: a claim or bucket cannot be mounted here, so each is
mapped to a local folder (``AIRFLOW_JAX_LOCAL_STORAGE='{"<name>": "/folder"}'``) and its mount
path becomes a link to that folder for the run. A storage with no mapping, or a mount path
that exists and is something else, fails before any process starts, saying what to set."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from airflow_provider_jax.manifest.data_inputs import FUSE_MOUNT_ROOT
from airflow_provider_jax.manifest.named_storage import LOCAL_STORAGE_ENV
from airflow_provider_jax.manifest.provider_keys import CONTAINER_NAME


def _storage_mounts(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(claim or bucket name, mount path) of every storage the program's pods mount."""
    found: dict[str, str] = {}
    for rjob in manifest["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        names = {}
        for volume in pod.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                names[volume["name"]] = volume["persistentVolumeClaim"]["claimName"]
            elif "csi" in volume:
                names[volume["name"]] = volume["csi"]["volumeAttributes"]["bucketName"]
        for container in pod["containers"]:
            if container["name"] != CONTAINER_NAME:
                continue
            for mount in container.get("volumeMounts", []):
                data_input = mount["mountPath"].startswith(FUSE_MOUNT_ROOT + "/")  # downloaded
                if mount["name"] in names and not data_input:
                    found[mount["mountPath"]] = names[mount["name"]]
    return [(name, path) for path, name in found.items()]


@contextlib.contextmanager
def linked_storage(manifest: Mapping[str, Any], log: Any) -> Iterator[None]:
    """Link each storage's mount path to its local folder for the run; undo it after."""
    mounts = _storage_mounts(manifest)
    if not mounts:
        yield
        return
    mapping = storage_mapping(os.environ.get(LOCAL_STORAGE_ENV))
    links: list[str] = []
    folders: list[str] = []  # made to hold a link: removed after the links, deepest first
    try:
        for name, path in mounts:
            folder = mapping.get(name)
            if not folder or not os.path.isdir(folder):
                raise ValueError(
                    f"storage {name!r} is mounted at {path} on GKE; the local backend cannot "
                    f"mount it. Map it to a local folder: {LOCAL_STORAGE_ENV}="
                    f'\'{{"{name}": "/path/to/folder"}}\' (got {folder!r}).'
                )
            if os.path.lexists(path):
                if os.path.realpath(path) != os.path.realpath(folder):
                    raise ValueError(
                        f"storage {name!r}: {path} exists here and is not {folder}; the local "
                        "backend would link it there. Move it, or map the storage to it."
                    )
                continue
            folders += _missing_parents(os.path.dirname(path))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(folder, path)
            links.append(path)
            log.info("storage %r: %s -> %s for this local run", name, path, folder)
        yield
    finally:  # only what this run made
        for path in links:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        for path in sorted(folders, key=len, reverse=True):
            with contextlib.suppress(OSError):  # something else was put there meanwhile
                os.rmdir(path)


def storage_mapping(raw: str | None) -> dict[str, str]:
    """``AIRFLOW_JAX_LOCAL_STORAGE`` read: a JSON object of storage names to local folders,
    or a ValueError that names the variable and shows what it should hold."""
    example = f'{LOCAL_STORAGE_ENV}=\'{{"my-claim": "/path/to/folder"}}\''
    try:
        mapping = json.loads(raw or "{}")
    except ValueError as err:
        raise ValueError(f"{LOCAL_STORAGE_ENV} is not JSON ({err}); set e.g. {example}.") from None
    if not isinstance(mapping, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise ValueError(
            f"{LOCAL_STORAGE_ENV} must be a JSON object of storage names to local folders, "
            f"got {raw!r}; set e.g. {example}."
        )
    return mapping


def _missing_parents(folder: str) -> list[str]:
    """``folder`` and those above it that do not exist yet."""
    missing: list[str] = []
    while folder and not os.path.exists(folder):
        missing.insert(0, folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing
