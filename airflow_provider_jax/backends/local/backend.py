"""The local backend: the same JobSet manifest, run as local processes, with JAX on this
machine's GPUs for a GPU job that finds them (``[jax] local_accelerators``), else on the CPU.

It waits in the worker only (there is nothing for a triggerer to watch), and reads the
leader's result exactly as the Kubernetes backend does: through
:class:`~airflow_provider_jax.backends.result.ResultReader`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.backends.local.capacity import LocalCapacity
from airflow_provider_jax.backends.local.elastic_look import ElasticLook
from airflow_provider_jax.backends.local.runner import LocalJobSet
from airflow_provider_jax.backends.result import ResultReader
from airflow_provider_jax.backends.timeout_alarm import postpone_airflows_alarm
from airflow_provider_jax.contract.backend import JobSettings, Outcome, Started, log_deadline
from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.manifest.capacity import described
from airflow_provider_jax.runtime.messages import resumed_step


class LocalBackend:
    def __init__(self, settings: JobSettings) -> None:
        self.settings = settings
        self._jobset: LocalJobSet | None = None

    def start(self, manifest: Mapping[str, Any]) -> Started:
        deadline = self.settings.deadline
        log_deadline(self.settings.log, deadline)
        self._jobset = LocalJobSet(
            manifest,
            log=self.settings.log,
            pythonpath=self.settings.pythonpath,
            timeout_s=None if deadline is None else max(deadline - time.time(), 0.0),
            execution_timeout_s=self.settings.execution_timeout_s,
            secrets_dir=self.settings.local_secrets_dir,
            watch=self.settings.watch,
            accelerators=self.settings.local_accelerators,
            capacity=LocalCapacity(self.settings.local_capacity_file, self.settings.log),
            elastic=self._elastic(manifest),
            clock=self.settings.goodput_clock,
        )
        if asked := described(manifest):
            self.settings.log.info("The local backend ignores capacity and placement (%s).", asked)
        meta = manifest["metadata"]
        return Started(meta["name"], meta["namespace"], handle=self._jobset)

    def _elastic(self, manifest: Mapping[str, Any]) -> ElasticLook | None:
        """An elastic job's size decisions, from its checkpoints in ``output_dir``."""
        settings = self.settings
        if settings.elastic is None or settings.elastic.checkpoint_dir is None:
            return None
        return ElasticLook(
            manifest["metadata"]["name"],
            settings.elastic,
            settings.cluster.gcp_conn_id,
            settings.log,
        )

    def wait(self, started: Started) -> Outcome:
        jobset: LocalJobSet = started.handle
        postpone_airflows_alarm(self.settings.deadline)  # the run ends itself at the deadline
        try:
            message, report = jobset.run()
        except JaxJobFailed as err:
            err.goodput = jobset.clock.ledger(time.time())
            raise
        reader = ResultReader(
            self.settings.output_dir,
            self.settings.cluster.gcp_conn_id,
            self.settings.cluster.impersonation_chain,
            self.settings.max_result_bytes,
            expected=self.settings.expects_result,
        )
        result, message_report = reader.from_message(message, self.settings.log)
        ledger = jobset.clock.ledger(time.time())
        resumed = resumed_step(message)
        return Outcome(result, message_report or report, resumed, ledger)

    def complete(
        self, event: Mapping[str, Any], cluster: Mapping[str, Any] | None = None
    ) -> Outcome:
        raise RuntimeError("the local backend never defers, so it has no event to complete")

    def kill(self) -> None:
        """Stop every process now; safe from a signal handler (it only sends signals)."""
        if self._jobset is not None:
            self._jobset.kill()


BACKEND = LocalBackend
