"""Read the leader's result on the Airflow side: the one reader both backends use.

Trust model: code in a pod can write any termination message it likes (it needs no bug in our
runtime, only ``open("/dev/termination-log", "w")``), while the Airflow worker that reads the
result holds far more privilege (its Google connection, its own files). So the pod never picks
what the worker reads. The only place a result is ever read from is ``<output_dir>/result.json``,
with ``output_dir`` as the operator rendered it; a message naming anything else fails the task
and nothing is read. Sizes are capped before a byte is read, and a result is JSON, never
unpickled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.contract.backend import DEFAULT_MAX_RESULT_BYTES
from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.runtime.output_paths import RESULT_FILE, result_uri
from airflow_provider_jax.runtime.stores import parse_location
from airflow_provider_jax.stores import Access, store


class ResultRejected(JaxJobFailed):
    """The leader's result is somewhere Airflow will not read, or too large to read."""


class ResultLost(JaxJobFailed):
    """The leader returned, but its result could not be read: an XCom of None would hide it."""


@dataclass(frozen=True)
class ResultReader:
    """Reads ``<output_dir>/result.json`` and nothing else.

    :param output_dir: the operator's rendered ``output_dir`` (None: no file results).
    :param gcp_conn_id: the Google connection, for an output_dir in GCS.
    :param impersonation_chain: service accounts to impersonate for it.
    :param max_bytes: the largest result read, in bytes.
    :param expected: the program is a function whose return value is the result
        (``entrypoint=`` or a decorated task), so finding none fails the task instead of
        returning None; a ``command=`` program returns nothing.
    """

    output_dir: str | None
    gcp_conn_id: str = "google_cloud_default"
    impersonation_chain: str | tuple[str, ...] | None = None
    max_bytes: int = DEFAULT_MAX_RESULT_BYTES
    expected: bool = False

    @property
    def location(self) -> str | None:
        return result_uri(self.output_dir) if self.output_dir else None

    def from_message(self, message: Mapping[str, Any] | None, log: Any) -> tuple[Any, Any]:
        """(result, last report) from the leader's parsed success message, or from
        ``<output_dir>/result.json`` when there is no message (its pod is gone)."""
        if message is None:
            if self.location is None:
                return self._lost("the leader's pod left no message, and there is no output_dir")
            try:
                return self.read(), None
            except FileNotFoundError:
                if self.expected:
                    return self._lost(
                        f"the leader's pod left no message, and {self.location} does not exist"
                    )
                log.warning("No result: the leader left no message and no %s.", self.location)
                return None, None
        report = message.get("report")
        if "result_uri" not in message:
            return message.get("result"), report
        named = message["result_uri"]
        if not isinstance(named, str) or self.location is None or named != self.location:
            raise ResultRejected(
                f"The leader named a result outside output_dir ({str(named)[:200]!r}; the only "
                f"result Airflow reads is {self.location or '<output_dir>/' + RESULT_FILE!r}). "
                "Nothing was read."
            )
        log.info("Reading the leader's result from %s", self.location)
        return self.read(), report

    def _lost(self, why: str) -> tuple[Any, Any]:
        """(None, None) for a program that returns nothing; a failure for one that returns."""
        if not self.expected:
            return None, None
        raise ResultLost(
            f"The job succeeded, but the leader's result could not be read: {why}. A result "
            "comes back in the leader pod's termination message (read from the pod, or through "
            "a MultiKueue worker's connection) or in <output_dir>/result.json: give output_dir "
            "so that it is also written there. The task fails rather than return None."
        )

    def read(self) -> Any:
        """The JSON value of ``<output_dir>/result.json``; FileNotFoundError if absent."""
        assert self.location is not None
        try:
            where = parse_location(self.location, "output_dir")
        except ValueError as err:
            raise ResultRejected(str(err)) from None
        access = Access(self.gcp_conn_id, self.impersonation_chain)
        try:
            # A pod that shares the filesystem could leave a symlink to the worker's secrets:
            # the driver reads only a plain file or object, within the cap.
            data = store(where, access).read(where, self.max_bytes, self._check_size)
        except ValueError as err:  # not a plain file or object
            raise ResultRejected(str(err)) from None
        self._check_size(len(data))  # it may have been replaced since its size was read
        try:
            return json.loads(data)
        except ValueError as err:
            raise ResultRejected(f"{self.location} is not JSON: {err}") from None

    def _check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise ResultRejected(
                f"{self.location} is {size} bytes, over the {self.max_bytes}-byte cap on a "
                "result ([jax] max_result_bytes): XComs live in Airflow's database. Write large "
                "outputs to output_dir and return their paths."
            )
