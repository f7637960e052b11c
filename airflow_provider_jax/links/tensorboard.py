"""Extra link from a JAX task to TensorBoard (or XProf) for its ``output_dir``.

The provider runs no TensorBoard: a platform team points ``[jax] tensorboard_url`` at its own
(``https://tensorboard.example.com/?logdir={output_dir}``, or a Vertex AI TensorBoard page),
and a task gets the link once it ended with TensorBoard event files (``events.out.tfevents.*``,
which ``jax.profiler`` and ``tf.summary``/``tensorboardX`` writers leave) under its rendered
``output_dir``. One listing per finished task, and only when the URL is configured.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from airflow_provider_jax.links.jobset import StoredLink
from airflow_provider_jax.runtime.location import Location

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
    if Location.is_gcs_uri(output_dir):
        found = _gcs_has_events(output_dir, gcp_conn_id, impersonation_chain)
    else:
        found = _local_has_events(Path(output_dir))
    return template.format(output_dir=quote(output_dir, safe="")) if found else ""


def _local_has_events(root: Path) -> bool:
    seen = 0
    for _, _, files in os.walk(root):
        if any(f.startswith(EVENT_FILES) for f in files):
            return True
        seen += len(files)
        if seen > MAX_FILES:
            return False
    return False


def _gcs_has_events(
    output_dir: str, gcp_conn_id: str, impersonation_chain: str | Sequence[str] | None
) -> bool:
    from airflow.providers.google.cloud.hooks.gcs import GCSHook

    from airflow_provider_jax.runtime.orbax_steps import GcsLocation  # not at DAG parse

    where = GcsLocation.from_url(output_dir)
    hook = GCSHook(gcp_conn_id=gcp_conn_id, impersonation_chain=impersonation_chain)
    # GCS filters by the glob; the names are checked here too, for servers that ignore it.
    blobs = hook.get_conn().list_blobs(
        where.bucket, prefix=where.prefix, match_glob=f"{where.prefix}**{EVENT_FILES}*"
    )
    for seen, blob in enumerate(blobs):
        if blob.name.rsplit("/", 1)[-1].startswith(EVENT_FILES):
            return True
        if seen > MAX_FILES:
            return False
    return False
