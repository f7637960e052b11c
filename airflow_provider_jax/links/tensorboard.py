"""Extra link from a JAX task to TensorBoard (or XProf) for its ``output_dir``.

The provider runs no TensorBoard: a platform team points ``[jax] tensorboard_url`` at its own
(``https://tensorboard.example.com/?logdir={output_dir}``, or a Vertex AI TensorBoard page),
and a task gets the link once it ended with TensorBoard event files (``events.out.tfevents.*``,
which ``jax.profiler`` and ``tf.summary``/``tensorboardX`` writers leave) under its rendered
``output_dir``. One listing per finished task, and only when the URL is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from airflow_provider_jax.links.jobset import StoredLink
from airflow_provider_jax.runtime.stores import parse_location
from airflow_provider_jax.stores import Access, store

EVENT_FILES = "events.out.tfevents."
MAX_FILES = 10_000  # files looked at under output_dir before giving up


class TensorBoardLink(StoredLink):
    """TensorBoard for the run's ``output_dir``, when it holds event files."""

    name = "TensorBoard"


def tensorboard_url(
    template: str | None,
    output_dir: str | None,
    gcp_conn_id: str = "google_cloud_default",
    impersonation_chain: str | Sequence[str] | None = None,
) -> str:
    """``template`` with ``{output_dir}`` filled in (URL-quoted), or "" when either is unset
    or ``output_dir`` holds no event files."""
    if not template or not output_dir:
        return ""
    where = parse_location(output_dir, "output_dir")
    found = store(where, Access(gcp_conn_id, impersonation_chain)).holds_file_named(
        where, EVENT_FILES, MAX_FILES
    )
    return template.format(output_dir=quote(output_dir, safe="")) if found else ""
