from __future__ import annotations

import os

import pytest

from airflow_provider_jax.runtime.call import (
    CALL_ENV,
    CHUNKS_ENV,
    MAX_COMPRESSED_BYTES,
    decode_call,
    encode_call,
)


def test_small_calls_stay_readable():
    env = encode_call({"entrypoint": "m:f", "kwargs": {"a": 1}})
    assert set(env) == {CALL_ENV}
    assert decode_call(env) == {"entrypoint": "m:f", "kwargs": {"a": 1}}


def test_big_calls_are_chunked_and_round_trip():
    call = {"source": os.urandom(150_000).hex()}
    env = encode_call(call)
    assert CALL_ENV not in env and int(env[CHUNKS_ENV]) > 1
    assert decode_call(env) == call


def test_too_big_calls_fail_clearly():
    with pytest.raises(ValueError, match="Put large code in the image"):
        encode_call({"source": os.urandom(MAX_COMPRESSED_BYTES).hex()})
