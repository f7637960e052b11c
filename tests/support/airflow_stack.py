"""A real Airflow for end-to-end tests: api-server, scheduler, dag-processor and triggerer
with LocalExecutor on PostgreSQL (as in production), in a temp AIRFLOW_HOME, driven through
its REST API and read in its metadata database."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy

from harness import reaper
from tests.support.airflow_home import AIRFLOW

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
FERNET_KEY = base64.urlsafe_b64encode(b"airflow-provider-jax-tests-32-b.").decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AirflowStack:
    home: Path
    dags_folder: Path
    database: str  # SQLAlchemy URL of the metadata database
    extra_env: Mapping[str, str] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    api_port: int = field(default_factory=free_port)
    log_ports: tuple[int, int] = field(default_factory=lambda: (free_port(), free_port()))
    token: str | None = field(default=None, repr=False)  # for the REST API

    @property
    def env(self) -> dict[str, str]:
        api_port = self.api_port
        return {
            **os.environ,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.database,
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__MAX_TEMPLATED_FIELD_LENGTH": "16384",  # the whole rendered JobSet
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
            "AIRFLOW__API__PORT": str(api_port),
            # Secrets every component must share. Left unset, each component that starts
            # before airflow.cfg exists writes one with keys of its own making, and the
            # triggerer then cannot decrypt the trigger kwargs the others stored (InvalidToken
            # kills its runner: seen once all four start within the same second).
            "AIRFLOW__API_AUTH__JWT_SECRET": "airflow-provider-jax-tests-jwt-secret",
            "AIRFLOW__CORE__FERNET_KEY": FERNET_KEY,
            "AIRFLOW__API__SECRET_KEY": "airflow-provider-jax-tests-api-secret",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "3",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self.log_ports[0]),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(self.log_ports[1]),
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }

    def start(
        self, component: str, name: str | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        """Start ``component``; ``name`` (default: the component) keys it here and names its
        log, so a second triggerer can run beside the first (with ``env`` of its own)."""
        name = name or component
        log = open(self.home / f"{name}.log", "ab")  # noqa: SIM115 - owned by the process
        args = (
            ["api-server", "--port", str(self.api_port)]
            if component == "api-server"
            else [component]
        )
        self.procs[name] = subprocess.Popen(
            [*AIRFLOW, *args],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        reaper.register_group(self.procs[name].pid)  # stopped with the test run, however it ends

    def kill(self, component: str, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        proc = self.procs.pop(component)
        _signal(proc, sig)
        _reap(proc, time.monotonic() + timeout)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM every component at once, then wait for all: one shutdown's time, not the
        sum of five."""
        procs, self.procs = self.procs, {}
        for proc in procs.values():
            _signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in procs.values():
            _reap(proc, deadline)

    def wait_for_dag(self, dag_id: str, timeout: float = 120) -> None:
        """Until the dag-processor has stored ``dag_id``; then unpause it. Polled in the
        database, and unpaused (and triggered) through the REST API as the UI does: an
        ``airflow`` CLI call costs seconds of CPU, which the stack under test needs on two
        cores."""
        self.wait_until(
            lambda: self.query("SELECT 1 FROM serialized_dag WHERE dag_id = :d", d=dag_id),
            timeout,
            lambda: f"{dag_id} to be parsed:\n{self.logs('dag-processor')}",
            every=1,
        )
        self.api("PATCH", f"/api/v2/dags/{dag_id}?update_mask=is_paused", {"is_paused": False})

    def trigger(self, dag_id: str, conf: Mapping | None = None) -> str:
        """A manual run, as ``airflow dags trigger`` makes one (no logical date); its id."""
        body = {"logical_date": None, "conf": dict(conf or {})}
        return self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"]

    def runs(self, dag_id: str) -> list[dict]:
        """``run_id`` and ``state`` of each run of ``dag_id``, oldest first."""
        rows = self.query(
            "SELECT run_id, state FROM dag_run WHERE dag_id = :dag_id ORDER BY id", dag_id=dag_id
        )
        return [{"run_id": run_id, "state": state} for run_id, state in rows]

    def wait_for_runs(
        self, dag_id: str, count: int, timeout: float = 300, poll: float = 1
    ) -> list[dict]:
        """Wait until ``count`` runs are finished; return all runs."""

        def finished() -> list[dict] | None:
            runs = self.runs(dag_id)
            return runs if sum(r["state"] in ("success", "failed") for r in runs) >= count else None

        return self.wait_until(
            finished, timeout, lambda: f"{dag_id}'s runs to finish: {self.runs(dag_id)}", poll
        )

    def api(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """Call the REST API as the UI does (``/api/v2/...``), as an all-admins user."""
        base = f"http://127.0.0.1:{self.api_port}"
        if self.token is None:
            with urllib.request.urlopen(f"{base}/auth/token", timeout=30) as reply:
                self.token = json.load(reply)["access_token"]
        request = urllib.request.Request(
            base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.load(reply)

    def api_is_up(self) -> bool:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.api_port}/api/v2/monitor/health", timeout=10
            ) as reply:
                return reply.status == 200
        except OSError:  # refused while it starts, or an HTTP error
            return False

    def query(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        """Rows of one read-only query on the metadata database."""
        engine = sqlalchemy.create_engine(self.database, poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.connect() as db:
                return [tuple(row) for row in db.execute(sqlalchemy.text(sql), params)]
        finally:
            engine.dispose()

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        """``state``, ``try_number`` and ``start_date`` (epoch seconds) from the metadata DB."""
        rows = self.query(
            "SELECT state, try_number, start_date FROM task_instance"
            " WHERE dag_id = :dag_id AND run_id = :run_id AND task_id = :task_id",
            dag_id=dag_id,
            run_id=run_id,
            task_id=task_id,
        )
        if not rows:
            return {"state": None, "try_number": 0, "start_date": None}
        state, tries, start = rows[0]
        return {"state": state, "try_number": tries, "start_date": start and start.timestamp()}

    def xcoms(self, dag_id: str, task_id: str, key: str = "return_value") -> dict[str, Any]:
        """``{run_id: value}`` of one task's XCom ``key`` (JSONB: decoded by the driver)."""
        rows = self.query(
            "SELECT run_id, value FROM xcom"
            " WHERE dag_id = :dag_id AND task_id = :task_id AND key = :key",
            dag_id=dag_id,
            task_id=task_id,
            key=key,
        )
        return dict(rows)

    def wait_for_state(
        self, dag_id: str, run_id: str, task_id: str, states: set[str], timeout: float = 180
    ) -> dict[str, Any]:

        def reached() -> dict[str, Any] | None:
            ti = self.task_instance(dag_id, run_id, task_id)
            return ti if ti["state"] in states else None

        def why() -> str:
            state = self.task_instance(dag_id, run_id, task_id)["state"]
            return f"{dag_id}.{task_id} ({state}) to be {states}:\n{self.logs('scheduler')}"

        return self.wait_until(reached, timeout, why, every=0.5)

    def wait_until(
        self,
        predicate: Callable[[], Any],
        timeout: float,
        what: str | Callable[[], str],
        every: float = 0.25,
    ) -> Any:
        """Poll ``predicate`` (a database query, say) every ``every`` s until truthy; its
        value. ``what`` (or what it returns, built only on a timeout) says what was awaited."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                awaited = what() if callable(what) else what
                raise TimeoutError(f"timed out after {timeout}s waiting for {awaited}")
            time.sleep(every)
        return value

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        """One try's task log (JSON lines), as the worker wrote it."""
        path = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
        path = path / f"task_id={task_id}" / f"attempt={try_number}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self, component: str) -> str:
        path = self.home / f"{component}.log"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""


def _signal(proc: subprocess.Popen, sig: int) -> None:
    """``sig`` to the process group of ``proc`` (a component and its children)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def _reap(proc: subprocess.Popen, deadline: float) -> None:
    """Wait for ``proc`` until ``deadline`` (monotonic); then SIGKILL its group."""
    try:
        proc.wait(max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL)
        proc.wait()
    reaper.unregister(proc.pid)


@contextmanager
def airflow_stack(
    home: Path, dags_folder: Path, database: str, extra_env: Mapping[str, str] | None = None
) -> Iterator[AirflowStack]:
    """Airflow's four services on ``database`` (a migrated one:
    ``PostgresServer.migrated_database``)."""
    stack = AirflowStack(
        home=home, dags_folder=dags_folder, database=database, extra_env=dict(extra_env or {})
    )
    try:
        for component in COMPONENTS:
            stack.start(component)
        stack.wait_until(
            stack.api_is_up, 180, lambda: f"the api-server:\n{stack.logs('api-server')}"
        )
        yield stack
    finally:
        stack.stop()
