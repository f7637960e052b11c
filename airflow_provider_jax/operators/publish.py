"""What a finished JAX task tells Airflow: the leader's result as the XCom, its last report,
the step it resumed from, its goodput, the newest finalized checkpoint as an asset event, and
its extra links."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_jax import settings
from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.links.tensorboard import TensorBoardLink, tensorboard_url
from airflow_provider_jax.metrics.send import send_job
from airflow_provider_jax.metrics.spans import send_phases
from airflow_provider_jax.operators.checkpoint_asset import announce_checkpoint
from airflow_provider_jax.reporting.goodput import GOODPUT_XCOM_KEY, summary_line

if TYPE_CHECKING:
    from airflow.sdk import Asset, Context

    from airflow_provider_jax.contract import Outcome, Started

LAST_REPORT_XCOM_KEY = "last_report"  # process 0's last report(), beside its return value
RESUMED_FROM_XCOM_KEY = "resumed_from"  # the checkpoint step the finishing attempt resumed from
JOBSET_NAME_XCOM_KEY, JOBSET_NAMESPACE_XCOM_KEY = "jobset_name", "jobset_namespace"
# Where this try ran: the capacity its pods selected, Kueue's flavor and ClusterQueue, the
# MultiKueue worker cluster (the goodput ledger's "admission").
ADMISSION_XCOM_KEY = "admission"


@dataclass
class OutcomePublisher:
    """Everything a JAX task pushes once its JobSet started or finished: plain values in,
    XComs, links, metrics and asset events out."""

    task_id: str
    log: Any
    accelerator_name: str
    hosts: int  # every slice's
    output_dir: str | None
    checkpoint_asset: Asset | None
    gcp_conn_id: str
    impersonation_chain: str | Sequence[str] | None
    link_keys: Sequence[str]  # every declared link's XCom key
    # The links this process stored, by XCom key (see StoredLink.get_link): the operator's.
    stored_links: dict[str, str] | None = field(default=None)

    @contextlib.contextmanager
    def failures(self, context: Context) -> Iterator[None]:
        """A failed run still tells its goodput. Whether it is tried again is the task's retry
        policy's to say (``operators/retry_policy.py``)."""
        try:
            yield
        except JaxJobFailed as err:
            if err.goodput is not None:
                self._publish_goodput(context, err.goodput)
            raise

    def announce(self, context: Context, started: Started, diagnostics: dict[str, str]) -> None:
        """XCom the JobSet's name and namespace, and its links, before waiting on it. Every
        declared link gets its XCom, empty where the backend has none (the local backend): at
        the end of the task Airflow reads each one, and a missing one logs an error."""
        ti = context["ti"]
        ti.xcom_push(key=JOBSET_NAME_XCOM_KEY, value=started.name)
        ti.xcom_push(key=JOBSET_NAMESPACE_XCOM_KEY, value=started.namespace)
        declared = dict.fromkeys(self.link_keys, "")
        for key, url in {**declared, **started.links, **diagnostics}.items():
            self._push_link(context, key, url)

    def _push_link(self, context: Context, key: str, url: str) -> None:
        context["ti"].xcom_push(key=key, value=url)
        if self.stored_links is not None:
            self.stored_links[key] = url

    def publish(self, context: Context, outcome: Outcome) -> Any:
        """The leader's return value is the XCom; its last report, the step it resumed from
        and the goodput ledger go beside it, and the newest checkpoint to ``checkpoint_asset``."""
        ti = context["ti"]
        if outcome.report is not None:
            ti.xcom_push(key=LAST_REPORT_XCOM_KEY, value=outcome.report)
        if outcome.resumed_from is not None:
            self.log.info("The leader resumed from step %d.", outcome.resumed_from)
            ti.xcom_push(key=RESUMED_FROM_XCOM_KEY, value=outcome.resumed_from)
        if outcome.goodput is not None:
            self._publish_goodput(context, outcome.goodput)
        self._link_tensorboard(context)
        if self.checkpoint_asset is not None:
            jobset = ti.xcom_pull(task_ids=self.task_id, key=JOBSET_NAME_XCOM_KEY)
            announce_checkpoint(
                context, self.checkpoint_asset, self.output_dir, outcome.report, jobset
            )
        return outcome.result

    def _link_tensorboard(self, context: Context) -> None:
        """The TensorBoard link, when ``[jax] tensorboard_url`` is set and the run left event
        files in its ``output_dir`` (one listing)."""
        template = settings.get("tensorboard_url")
        try:
            url = tensorboard_url(
                template, self.output_dir, self.gcp_conn_id, self.impersonation_chain
            )
        except Exception as err:  # a link is never worth failing a finished run for
            self.log.warning(
                "No TensorBoard link: %s could not be listed: %s", self.output_dir, err
            )
            return
        if url:
            self._push_link(context, TensorBoardLink().xcom_key, url)

    def _publish_goodput(self, context: Context, ledger: dict[str, Any]) -> None:
        self.log.info("%s: %s", self.task_id, summary_line(ledger))
        ti = context["ti"]
        tags = {"dag_id": ti.dag_id, "task_id": ti.task_id, "accelerator": self.accelerator_name}
        send_job(ledger, self.hosts, tags)
        send_phases(ledger, tags)
        ti.xcom_push(key=GOODPUT_XCOM_KEY, value=ledger)
        if admission := ledger.get("admission"):
            ti.xcom_push(key=ADMISSION_XCOM_KEY, value=admission)
