"""docker-compose.yaml's stack, driven as a user drives it: the README's ``docker compose``
lines as written, in a copy of the repository as a clone has it (``checkout``), with a few
settings (ports, an image name), then Airflow's REST API with the user's password. Compose
names the project after the copy's folder, ``ajx<pid>-<name>``, as it names a user's after
theirs: stacks never meet, and ``down`` checks that it left no container, network or volume."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.processes import alive
from tests.support.airflow_stack import free_port
from tests.support.docker_engine import DockerEngine
from tests.support.jobset_schema import REPO

CELERY_ENV = Path("docker", "celery.env")  # in the repository


def _readme_commands() -> dict[tuple[bool, str], list[str]]:
    """The README's ``docker compose`` lines, as the arguments after ``docker compose``, by
    (CeleryExecutor, ``up`` or ``down``). The tests run these, as written."""
    commands = {}
    for line in re.findall(r"^docker compose (.+)$", (REPO / "README.md").read_text(), re.M):
        args = shlex.split(line)
        celery = "--env-file" in args
        assert not celery or Path(args[args.index("--env-file") + 1]) == CELERY_ENV, line
        commands[celery, next(verb for verb in ("up", "down") if verb in args)] = args
    assert len(commands) == 4, commands
    return commands


README_COMMANDS = _readme_commands()
USER = "airflow"  # docker-compose.yaml's UI/API user
IMAGES_TIMEOUT_S = 3600  # the stand-ins' first build: mmdebstrap and the wheels, once a machine
# The image every stack of this test process builds and runs (`docker compose build` names it):
# a name of its own, so another run's build, of other code, never replaces it.
IMAGE = f"airflow-provider-jax:test-{os.getpid()}"


def remove_stale(engine: DockerEngine) -> None:
    """What test processes that are gone left (a run killed before its ``down``) on an engine
    that outlived them: their stacks' containers, networks and volumes, and their images."""
    label = '{{.Label "com.docker.compose.project"}}'
    projects = set(engine.docker("ps", "-a", "--format", label).split())
    projects |= set(engine.docker("network", "ls", "--format", label).split())
    projects |= set(engine.docker("volume", "ls", "--format", label).split())
    for project in projects:
        if (owner := re.fullmatch(r"ajx(\d+)-.+", project)) and not alive(int(owner[1])):
            selector = f"label=com.docker.compose.project={project}"
            if containers := engine.docker("ps", "-aq", "--filter", selector).split():
                engine.docker("rm", "-f", "-v", *containers)
            for kind in ("network", "volume"):
                if names := engine.docker(kind, "ls", "-q", "--filter", selector).split():
                    engine.docker(kind, "rm", *names)
    repository = IMAGE.split(":")[0]
    for tag in engine.docker("image", "ls", "--format", "{{.Tag}}", repository).split():
        if (owner := re.fullmatch(r"test-(\d+)", tag)) and not alive(int(owner[1])):
            engine.docker("image", "rm", f"{repository}:{tag}")


def checkout(parent: Path, name: str) -> Path:
    """The repository's files copied as a clone of this work has them (what git tracks, and
    what it would track: no ignored file, no ``.env``, no compose override of a developer's),
    into ``parent/ajx<pid>-<name>``, for a stack of its own: its ``dags/`` and compose files
    are the test's, and its folder's name is its project's."""
    into = parent / f"ajx{os.getpid()}-{name}"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for path in filter(None, os.fsdecode(listed).split("\0")):
        if (REPO / path).is_file():  # not a tracked file deleted in the work tree
            (into / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, into / path)
    return into


def compose_images(engine: DockerEngine) -> None:
    """``make compose-images`` into ``engine``: the stand-ins, built once per machine."""
    done = subprocess.run(
        ["make", "-s", "compose-images"],
        cwd=REPO,
        env=engine.env,
        capture_output=True,
        text=True,
        timeout=IMAGES_TIMEOUT_S,
    )
    if done.returncode:
        raise RuntimeError(f"make compose-images failed:\n{done.stdout}{done.stderr}")


@dataclass
class ComposeStack:
    engine: DockerEngine
    root: Path  # the checkout it runs in (``checkout``): its compose files, dags/ and build
    celery: bool = False  # the README's CeleryExecutor `up`, with docker/celery.env
    settings: Mapping[str, str] = field(default_factory=dict)  # as a user's shell has them
    password: str = "airflow"
    api_port: int = field(default_factory=free_port)
    flower_port: int = field(default_factory=free_port)
    _token: str | None = field(default=None, repr=False)

    @property
    def project(self) -> str:
        """What Compose names the project: its folder's name."""
        return self.root.name

    @property
    def env(self) -> dict[str, str]:
        """A user's shell: none of the test run's variables, the stack's settings."""
        return {
            "PATH": os.environ["PATH"],
            "HOME": os.environ["HOME"],
            "DOCKER_HOST": self.engine.host,
            "AIRFLOW_IMAGE_NAME": IMAGE,
            "AIRFLOW_API_PORT": str(self.api_port),
            "FLOWER_PORT": str(self.flower_port),
            **self.settings,
        }

    def compose(self, *args: str, timeout: float = 900, check: bool = True) -> str:
        """``docker compose ARGS`` in the checkout: its output (both streams); a failure
        carries it, with the stack's state."""
        status, out = self.attempt(*args, timeout=timeout)
        if check and status:
            raise AssertionError(
                f"docker compose {' '.join(args)} failed ({status}):\n{out[-6000:]}\n{self.state()}"
            )
        return out

    def attempt(self, *args: str, timeout: float = 900) -> tuple[int, str]:
        """``docker compose ARGS`` in the checkout, which finds its files as a user's does
        (``docker-compose.yaml``, and ``docker-compose.override.yaml`` where there is one),
        on CeleryExecutor with ``docker/celery.env`` (which the README's lines name): its
        exit status and output, whatever they are."""
        argv = ["docker", "compose"]
        if self.celery and "--env-file" not in args:
            argv += ["--env-file", str(CELERY_ENV)]
        done = subprocess.run(
            [*argv, *args],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
        return done.returncode, done.stdout

    def state(self) -> str:
        """``ps`` and each service's last log lines, for a failure's message."""
        ps = self.compose("ps", "-a", check=False, timeout=120)
        logs = self.compose("logs", "--no-color", "--tail", "40", check=False, timeout=120)
        return f"{ps}\n{logs[-12000:]}"

    def up(self, *services: str, timeout: float = 900) -> None:
        """The README's ``up`` (``-d --wait``: every service running, and healthy where it has
        a check); of ``services`` only, if given."""
        self.compose(*README_COMMANDS[self.celery, "up"], *services, timeout=timeout)

    def down(self) -> None:
        """The README's ``down -v``, then nothing of the project may be left: no container,
        no network, no volume (its named ones, and those its containers' images declare).
        Without the Celery profile, ``down`` left its services' containers, and the network
        they held."""
        attached = {
            mount["Name"]
            for container in self.containers()
            for mount in container["Mounts"]
            if mount["Type"] == "volume"
        }
        self.compose(*README_COMMANDS[self.celery, "down"], timeout=300)
        label = f"label=com.docker.compose.project={self.project}"
        volumes = set(self.engine.docker("volume", "ls", "-q").split())
        left = {
            "containers": self.engine.docker("ps", "-aq", "--filter", label).split(),
            "networks": self.engine.docker("network", "ls", "-q", "--filter", label).split(),
            "volumes": sorted(
                volumes & attached
                | set(self.engine.docker("volume", "ls", "-q", "--filter", label).split())
            ),
        }
        assert not any(left.values()), f"down -v left {left}"

    def containers(self) -> list[dict[str, Any]]:
        """``docker inspect`` of every container of the project."""
        ids = self.compose("ps", "-aq", timeout=120).split()
        return json.loads(self.engine.docker("inspect", *ids)) if ids else []

    def restarts(self) -> dict[str, int]:
        """Each container's restart count: a crash loop under ``restart: always`` shows here,
        not in ``ps``."""
        return {c["Name"].lstrip("/"): c["RestartCount"] for c in self.containers()}

    # Airflow's REST API, as the user: the password, then a bearer token.

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def token(self) -> str:
        if self._token is None:
            body = json.dumps({"username": USER, "password": self.password}).encode()
            request = urllib.request.Request(
                f"{self.url}/auth/token",
                data=body,
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=60) as reply:
                self._token = json.load(reply)["access_token"]
        return self._token

    def api(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.token()}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: {error.code} {error.read()[:2000]!r}") from None

    def wait_until(
        self, what: str | Callable[[], str], check: Callable[[], Any], timeout: float
    ) -> Any:
        """``check()``'s first truthy value, polled every second; a call that fails meanwhile
        (the API server busy past a request's timeout) is polled again. On a timeout,
        ``what``, the last failure and the stack's state."""
        deadline = time.monotonic() + timeout
        failure = None
        while True:
            try:
                if value := check():
                    return value
            except (AssertionError, OSError) as error:  # OSError: refused, timed out
                failure = error
            if time.monotonic() > deadline:
                awaited = what() if callable(what) else what
                raise TimeoutError(
                    f"not within {timeout}s: {awaited}\nlast failure: {failure!r}\n{self.state()}"
                )
            time.sleep(1)

    def unpause(self, dag_id: str, timeout: float = 300) -> None:
        """Once the dag-processor has parsed ``dag_id`` (the stack stores new DAGs paused; 404
        until then)."""
        self.wait_until(
            f"{dag_id} to be parsed", lambda: self.api("GET", f"/api/v2/dags/{dag_id}"), timeout
        )
        self.api("PATCH", f"/api/v2/dags/{dag_id}?update_mask=is_paused", {"is_paused": False})

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None) -> str:
        body = {"logical_date": None, "conf": dict(conf or {})}
        return self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"]

    def finished(self, dag_id: str, run_id: str, timeout: float = 600) -> str:
        """The run's final state, once it has one."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}"

        def final() -> str | None:
            state = self.api("GET", path)["state"]
            return state if state in ("success", "failed") else None

        return self.wait_until(f"{dag_id} {run_id} to finish", final, timeout)

    def task_path(self, dag_id: str, run_id: str, task_id: str) -> str:
        return f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        entry = self.api("GET", f"{self.task_path(dag_id, run_id, task_id)}/xcomEntries/{key}")
        return entry["value"]

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        """One try's log as the REST API serves it (the API server fetches it from the log
        server of the worker that ran it): one line per event."""
        path = f"{self.task_path(dag_id, run_id, task_id)}/logs/{try_number}?full_content=true"
        content = self.api("GET", path)["content"]
        return "\n".join(
            line.get("event", "") if isinstance(line, dict) else str(line) for line in content
        )
