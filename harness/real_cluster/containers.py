"""One run of one container as a local process, for the fake kubelet: a restart is a new
:class:`Instance` (its own log file, exit and start time), in the same pod folder.

- Its own mount and UTS namespaces, as a pod has: ``/etc/hosts`` maps its JobSet's pod names
  to loopback and the hostname is the pod's. The machine's own files are never touched.
- Its ``emptyDir`` volumes are folders of the pod's, mounted at their paths; where the pod
  mounts its service account (the API server's ServiceAccount admission adds the
  ``kube-api-access`` volume), ``/var/run/secrets/kubernetes.io/serviceaccount`` holds a bound
  token, the cluster's CA and the namespace. A mount path missing here is made in an overlay
  private to the process.
- The container's restart rules (``restartPolicyRules``, Kubernetes 1.34+) are read here:
  https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-restart-rules
"""

from __future__ import annotations

import asyncio
import datetime
import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import reaper

SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
# $0: the pod's /etc/hosts, $1: its hostname, $2: its volume mounts (mount_script), then argv.
_WRAPPER = 'mount --bind "$0" /etc/hosts && hostname "$1" && eval "$2" && shift 2 && exec "$@"'


def now() -> str:
    return (
        datetime.datetime.now(datetime.UTC)
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
    )


@dataclass(eq=False)
class Instance:
    """One start of a container: its process, its log, how it ended."""

    name: str
    spec: Mapping[str, Any]
    log_file: Path
    process: asyncio.subprocess.Process | None = None
    started: str | None = None
    code: int | None = None
    finished: str | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    pump: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.code is None

    async def wait(self) -> int:
        await self.exited.wait()
        assert self.code is not None
        return self.code


def restart_action(container: Mapping[str, Any], code: int) -> str | None:
    """The action of the container's first restart rule that matches exit ``code``
    (``Restart``, ``RestartAllContainers``), else None: its restartPolicy decides."""
    for rule in container.get("restartPolicyRules") or ():
        codes = rule.get("exitCodes") or {}
        inside = code in (codes.get("values") or ())
        if inside if codes.get("operator") == "In" else not inside:
            return str(rule["action"])
    return None


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """A native sidecar: an init container that keeps running (``restartPolicy: Always``)."""
    return container.get("restartPolicy") == "Always"


def mount_script(mounts: list[tuple[Path, str]], folder: Path) -> str:
    """Shell commands that mount each ``(folder, mount path)`` in the process's own mount
    namespace. A mount path that does not exist here is made in an overlay of its nearest
    existing ancestor (the ancestor keeps its contents; the machine's is untouched), as a
    container runtime makes mount points in the container's root."""
    commands = []
    for i, (source, target) in enumerate(mounts):
        real = Path(os.path.realpath(target))  # /var/run/... is /run/... here
        ancestor = real
        while not ancestor.exists():
            ancestor = ancestor.parent
        if ancestor != real:
            if ancestor == Path("/") or folder.is_relative_to(ancestor):
                raise ValueError(
                    f"the fake kubelet cannot mount {target}: its nearest existing ancestor "
                    f"{ancestor} is / or holds the pod's own folder"
                )
            layer = folder / "overlays" / str(i)
            (layer / "upper" / real.relative_to(ancestor)).mkdir(parents=True, exist_ok=True)
            (layer / "work").mkdir(exist_ok=True)
            options = f"lowerdir={ancestor},upperdir={layer / 'upper'},workdir={layer / 'work'}"
            commands.append(f"mount -t overlay overlay -o {shlex.quote(options)} {ancestor}")
        commands.append(f"mount --bind {shlex.quote(str(source))} {shlex.quote(str(real))}")
    return " && ".join(commands) or "true"


def volume_mounts(
    pod: Mapping[str, Any], container: Mapping[str, Any], folder: Path
) -> list[tuple[Path, str]]:
    """The container's ``emptyDir`` mounts, each a folder of the pod's that outlives its
    containers' restarts, as an ``emptyDir`` does."""
    kinds = {v["name"]: v for v in pod["spec"].get("volumes") or ()}
    mounts = []
    for mount in container.get("volumeMounts") or ():
        if "emptyDir" in kinds.get(mount["name"], {}):
            source = folder / "volumes" / mount["name"]
            source.mkdir(parents=True, exist_ok=True)
            mounts.append((source, mount["mountPath"]))
    return mounts


def sa_volume_mount(container: Mapping[str, Any]) -> bool:
    """Whether the container mounts the pod's service account token."""
    return any(m.get("mountPath") == SA_PATH for m in container.get("volumeMounts") or ())


def write_service_account(folder: Path, token: str, ca: bytes, namespace: str) -> Path:
    """The files a kubelet projects for the service account: a folder to mount at SA_PATH."""
    target = folder / "serviceaccount"
    target.mkdir(parents=True, exist_ok=True)
    (target / "token").write_text(token)
    (target / "ca.crt").write_bytes(ca)
    (target / "namespace").write_text(namespace)
    return target


async def start(
    instance: Instance,
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    hosts: Path,
    hostname: str,
    mounts: str,
) -> None:
    """Start ``argv`` in its namespaces, its output timestamped into the instance's log."""
    wrapper = ["unshare", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c",
               _WRAPPER, str(hosts), hostname, mounts, *argv]  # fmt: skip
    instance.process = await asyncio.create_subprocess_exec(
        *wrapper, env=env, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    reaper.register_group(instance.process.pid)  # stops with a test run, however it ends
    instance.started = now()
    instance.pump = asyncio.create_task(_pump(instance))


async def _pump(instance: Instance) -> None:
    process = instance.process
    assert process is not None and process.stdout is not None
    with instance.log_file.open("w") as out:
        async for raw in process.stdout:
            out.write(f"{now()} {raw.decode(errors='replace').rstrip(chr(10))}\n")
            out.flush()
    code = await process.wait()
    reaper.unregister(process.pid)
    instance.code = 128 - code if code < 0 else code  # killed by signal N: 128 + N
    instance.finished = now()
    instance.exited.set()


def on_path(command: str, env: Mapping[str, str]) -> bool:
    return shutil.which(command, path=env.get("PATH", os.defpath)) is not None
