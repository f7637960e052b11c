from __future__ import annotations

import pytest

from airflow_provider_jax.backends.local.localize import free_ports
from airflow_provider_jax.backends.local.pods import expand
from airflow_provider_jax.manifest.coordination import SHARED_PORT_RANGE

ENV = {"A": "x", "B": "$(A)", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("$(A)/$(A)", "x/x"),
        ("$$(A)", "$(A)"),  # an escaped reference stays literal
        ("$$$(A)", "$x"),
        ("$(B)", "$(A)"),  # a value is not expanded again
        ("$(MISSING) $(A)", "$(MISSING) x"),  # unknown: as written
        ("$(A", "$(A"),  # unterminated
        ("$(a$(A)", "$(a$(A)"),  # the name runs to the first ")", and is unknown
        ("a$", "a$"),
        ("$(EMPTY)-", "-"),
        ("", ""),
    ],
)
def test_expand_as_kubernetes_does(text: str, expanded: str) -> None:
    assert expand(text, ENV) == expanded


def test_expand_takes_a_bundle_sized_value_in_one_pass() -> None:
    bundle = "QUJD" * 250_000  # 1 MB of base64, as a runtime bundle in the env
    assert expand(f"$(A) {bundle} $(A)", ENV) == f"x {bundle} x"


def test_free_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    assert all(SHARED_PORT_RANGE[0] <= p < SHARED_PORT_RANGE[1] for p in ports)
