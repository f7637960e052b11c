"""A StatsD server as small as can be: a UDP socket whose datagrams the tests read, so a metric
is checked as the deployment's StatsD would receive it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable


class StatsdListener:
    """Collects every StatsD line sent to ``127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def env(self, prefix: str = "airflow") -> dict[str, str]:
        """Airflow's settings that send its metrics here."""
        return {
            "AIRFLOW__METRICS__STATSD_ON": "True",
            "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__STATSD_PORT": str(self.port),
            "AIRFLOW__METRICS__STATSD_PREFIX": prefix,
        }

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            with self._lock:
                self.lines.extend(data.decode().splitlines())

    def named(self, name: str) -> list[str]:
        """The lines of metric ``name``: ``<name>:<value>|<type>``."""
        with self._lock:
            return [line for line in self.lines if line.split(":", 1)[0] == name]

    def wait_for(self, check: Callable[[], bool], timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.05)
        return check()

    def close(self) -> None:
        self.sock.close()
