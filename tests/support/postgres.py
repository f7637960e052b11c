"""A throwaway PostgreSQL server for the tests that run Airflow as a service.

Production (and our compose file) runs Airflow on PostgreSQL; on SQLite a running scheduler,
triggerer and api-server contend for one file lock ("database is locked") and a deleted
trigger's id is handed to the next trigger. So every running-Airflow test gets a database of
its own on one server started here, from Debian's ``postgresql`` binaries, in a temp dir.
``initdb`` refuses to run as root, so under root the server runs as the ``postgres`` user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import pytest

from harness import reaper
from tests.support.airflow_home import AIRFLOW
from tests.support.airflow_stack import free_port

USER = "airflow"  # the database role Airflow connects as (trust auth, loopback only)


def postgres_bin() -> Path | None:
    """The newest installed server's bin folder (Debian keeps them versioned)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    return Path(found[-1]).parent if found else None


def _version(path: str) -> float:
    try:
        return float(Path(path).parent.parent.name)
    except ValueError:
        return 0.0


@dataclass
class PostgresServer:
    bin: Path
    root: Path
    port: int
    as_user: str | None  # the OS user the server runs as, when we are root
    _names = count()
    _template: str | None = None  # the migrated database that others copy

    def _run(self, tool: str, *args: str) -> str:
        argv = [str(self.bin / tool), *args]
        if self.as_user:
            argv = ["runuser", "-u", self.as_user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode:
            raise RuntimeError(f"{tool} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    def start(self) -> None:
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8")
        # A test server: durability off buys speed; loopback and a private socket dir only.
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.root / "log"), "-w",
                  "start")  # fmt: skip
        # pg_ctl leaves the server as a daemon: stopped with the test run, however it ends, by
        # PostgreSQL's immediate shutdown.
        reaper.register_daemon(self.pid, signal.SIGQUIT)

    @property
    def pid(self) -> int:
        """The postmaster's pid (the first line of its ``postmaster.pid``)."""
        return int((self.root / "data" / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        pid = self.pid
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        reaper.unregister(pid)

    def create_database(self, prefix: str = "airflow", template: str | None = None) -> str:
        """A new database, empty or a copy of ``template``; its SQLAlchemy URL."""
        name = f"{prefix}_{next(self._names)}"
        copy = ["-T", template] if template else []
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, *copy, name)
        return f"postgresql+psycopg2://{USER}@127.0.0.1:{self.port}/{name}"

    def migrated_database(self) -> str:
        """A new database with Airflow's schema: ``airflow db migrate`` runs once per session,
        on a template that each one copies (a copy takes a moment, a migration many seconds
        of CPU that the running Airflow under test needs)."""
        if self._template is None:
            url = self.create_database("airflow_template")
            with tempfile.TemporaryDirectory() as home:
                env = {
                    **os.environ,
                    "AIRFLOW_HOME": home,
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url,
                    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                }
                done = subprocess.run(
                    [*AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True,
                    timeout=300, check=False,
                )  # fmt: skip
            if done.returncode:
                raise RuntimeError(f"airflow db migrate failed:\n{done.stdout}{done.stderr}")
            self._template = url.rsplit("/", 1)[1]
        return self.create_database(template=self._template)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One server for the session; each running Airflow takes a database of its own."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.fail(
            "PostgreSQL is not installed (apt-get install postgresql): the running-Airflow "
            "tests need it, as production does; make test installs it where it can.",
            pytrace=False,
        )
    as_user = None
    # Not pytest's tmp_path: its parents are private to root, out of the postgres user's reach.
    root = Path(tempfile.mkdtemp(prefix="airflow-jax-pg-"))
    if os.geteuid() == 0:
        as_user = "postgres"
        entry = pwd.getpwnam(as_user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(bin=bin_dir, root=root, port=free_port(), as_user=as_user)
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)
