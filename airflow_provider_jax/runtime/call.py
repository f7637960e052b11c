"""How a call travels in the pod spec: plain JSON in one env value when small, else
zlib-compressed and split over several env values, each under Linux's 128 KiB per-string
limit (MAX_ARG_STRLEN), with the whole spec well under etcd's 1.5 MiB object limit.

Stdlib only: the launcher encodes with it in Airflow and the runtime decodes in the pod.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from typing import Any

CALL_ENV = "AIRFLOW_JAX_CALL"
CHUNK_ENV = "AIRFLOW_JAX_CALL_Z"  # AIRFLOW_JAX_CALL_Z0, _Z1, ... (compressed call)
CHUNKS_ENV = "AIRFLOW_JAX_CALL_CHUNKS"
PLAIN_LIMIT = 32 * 1024
CHUNK_BYTES = 96 * 1024
MAX_COMPRESSED_BYTES = 512 * 1024


def encode_call(call: Mapping[str, Any]) -> dict[str, str]:
    """Env values that carry ``call``. Raises ValueError when it is too big for a pod spec."""
    text = json.dumps(call, sort_keys=True, allow_nan=False)
    if len(text.encode()) <= PLAIN_LIMIT:
        return {CALL_ENV: text}
    packed = base64.b64encode(zlib.compress(text.encode(), 9)).decode()
    if len(packed) > MAX_COMPRESSED_BYTES:
        raise ValueError(
            f"the call is {len(text.encode())} bytes of JSON ({len(packed)} compressed); code and "
            f"arguments travel in the pod spec, which holds at most {MAX_COMPRESSED_BYTES} "
            "compressed bytes here. Put large code in the image (entrypoint=...) and pass large "
            "data by reference (a gs:// path)."
        )
    chunks = [packed[i : i + CHUNK_BYTES] for i in range(0, len(packed), CHUNK_BYTES)]
    env = {f"{CHUNK_ENV}{i}": chunk for i, chunk in enumerate(chunks)}
    env[CHUNKS_ENV] = str(len(chunks))
    return env


def decode_call(environ: Mapping[str, str]) -> dict[str, Any]:
    """The call from the process environment, whichever way it was shipped."""
    if CHUNKS_ENV in environ:
        packed = "".join(environ[f"{CHUNK_ENV}{i}"] for i in range(int(environ[CHUNKS_ENV])))
        return json.loads(zlib.decompress(base64.b64decode(packed)))
    return json.loads(environ[CALL_ENV])
