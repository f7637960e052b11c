"""A process waits for its coordinator to listen, and no longer; one that never comes is
given up on at the timeout, so that JAX's own join reports it."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from airflow_provider_jax.runtime.coordinator import wait_for_coordinator


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_it_joins_within_a_poll_of_the_coordinator_listening():
    port = _free_port()
    listening = threading.Event()
    listening_at: list[float] = []

    def listen_later() -> None:
        time.sleep(1.0)  # the leader is still starting
        server = socket.create_server(("127.0.0.1", port))
        listening_at.append(time.monotonic())
        listening.set()
        server.accept()[0].close()
        server.close()

    threading.Thread(target=listen_later, daemon=True).start()
    assert wait_for_coordinator(f"127.0.0.1:{port}", timeout=30, poll=0.05)
    assert listening.is_set()
    assert time.monotonic() - listening_at[0] < 1.0  # not gRPC's backoff of seconds


def test_a_coordinator_that_never_listens_is_given_up_on_at_the_timeout():
    began = time.monotonic()
    assert not wait_for_coordinator(f"127.0.0.1:{_free_port()}", timeout=0.5, poll=0.1)
    assert 0.3 <= time.monotonic() - began < 2


def test_an_ipv6_literal_is_read_with_its_brackets():
    port = _free_port()
    try:
        server = socket.create_server(("::1", port), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with server:
        accepting = threading.Thread(target=lambda: server.accept()[0].close(), daemon=True)
        accepting.start()
        assert wait_for_coordinator(f"[::1]:{port}", timeout=5, poll=0.05)
        accepting.join(5)  # before the server closes under it
