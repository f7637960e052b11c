"""Wait until the JAX coordinator listens before joining it.

A process that calls ``jax.distributed.initialize`` before process 0 has started the
coordination service meets gRPC's reconnect backoff: 1 s after the first refusal, 1.6 times
longer after each next one, up to 120 s (gRPC's ``doc/connection-backoff.md``). Measured here
with jax 0.10: a worker that began 26 s before its leader joined it 17 s after the leader was
listening. On a slice whose leader pod pulls its image or lands on its node later than the
others, that is every chip idle for as long. A TCP connect every quarter-second, until the
port answers, ends the wait within that instead.
"""

from __future__ import annotations

import socket
import time

POLL = 0.25  # seconds between tries
# JAX's own default ``initialization_timeout``, for the wait and the join together.
JOIN_TIMEOUT = 300.0
LAST_JOIN_S = 30.0  # the least the join itself is given, however long the wait took


def wait_for_coordinator(address: str, timeout: float = JOIN_TIMEOUT, poll: float = POLL) -> bool:
    """True once ``host:port`` accepts a TCP connection; False when ``timeout`` seconds pass
    first, and JAX's own join then reports what is wrong. A name that does not resolve yet
    (the leader's pod, behind a headless Service, not created yet) is waited for too.

    :param address: the coordinator's ``host:port`` (``[v6]:port`` for an IPv6 literal).
    :param timeout: the most seconds to wait.
    :param poll: seconds between tries.
    """
    host, _, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=max(poll, 1.0)):
                return True
        except OSError:  # refused, not resolvable yet, unreachable, timed out
            if time.monotonic() + poll >= deadline:
                return False
            time.sleep(poll)


def wait_to_join(address: str, process_id: int) -> int:
    """Block until this process may join, and return the ``initialization_timeout`` to join
    with. A worker waits for the coordinator to listen, then gets what its wait left of JAX's
    own 300 s (at least ``LAST_JOIN_S``), so a leader that never comes fails the worker after
    300 s, not 600. The coordinator's own process waits for nothing.

    :param address: the coordinator's ``host:port``.
    :param process_id: this process's JAX process id.
    """
    if process_id == 0:
        return int(JOIN_TIMEOUT)
    began = time.monotonic()
    wait_for_coordinator(address, JOIN_TIMEOUT)
    return int(max(JOIN_TIMEOUT - (time.monotonic() - began), LAST_JOIN_S))
