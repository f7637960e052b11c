"""Extra links to what a try leaves to look inside it: its profiles (``profile_steps``) and its
debug dumps (``debug_dump``), in that try's own folders under ``output_dir``.

A profile on GCS opens in your TensorBoard or XProf (``[jax] tensorboard_url``, its
``{output_dir}`` given the try's profile folder, which holds ``host-<i>/plugins/profile/``),
else in the Cloud console's bucket browser; a local one is its path. Both are stored when
the JobSet starts, since the folders' names are known then.
"""

from __future__ import annotations

from urllib.parse import quote

from airflow_provider_jax.links.jobset import StoredLink
from airflow_provider_jax.runtime.location import Location

STORAGE_BROWSER = "https://console.cloud.google.com/storage/browser"


class ProfileLink(StoredLink):
    """The try's JAX profiles, in TensorBoard/XProf or where they lie."""

    name = "JAX profile"


class DebugDumpLink(StoredLink):
    """The try's debug dumps: every host's stacks, log tail and HLO modules."""

    name = "Debug dump"


def folder_url(folder: str) -> str:
    """The Cloud console's page for a ``gs://`` folder, or ``file://`` and a local path."""
    where = Location.parse(folder, "the folder")
    if not where.is_gcs:
        return f"file://{quote(where.key)}"
    return f"{STORAGE_BROWSER}/{quote(where.bucket)}/{quote(where.prefix)}"


def profile_url(tensorboard_template: str | None, folder: str) -> str:
    """TensorBoard/XProf for a ``gs://`` profile folder when a URL is configured, else the
    folder itself (:func:`folder_url`)."""
    if tensorboard_template and Location.is_gcs_uri(folder):
        return tensorboard_template.format(output_dir=quote(folder, safe=""))
    return folder_url(folder)
