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
from airflow_provider_jax.runtime.stores import named_store, parse_location
from airflow_provider_jax.stores import store


class ProfileLink(StoredLink):
    """The try's JAX profiles, in TensorBoard/XProf or where they lie."""

    name = "JAX profile"


class DebugDumpLink(StoredLink):
    """The try's debug dumps: every host's stacks, log tail and HLO modules."""

    name = "Debug dump"


def folder_url(folder: str) -> str:
    """Where a person looks at the folder: the Cloud console's page for a ``gs://`` folder,
    or ``file://`` and a local path (its store's driver says)."""
    where = parse_location(folder, "the folder")
    return store(where).browser_url(where)


def profile_url(tensorboard_template: str | None, folder: str) -> str:
    """TensorBoard/XProf for a profile folder it can read (in a store other hosts reach, as
    ``gs://``) when a URL is configured, else the folder itself (:func:`folder_url`)."""
    reached = named_store(folder)
    if tensorboard_template and reached is not None and reached.shared:
        return tensorboard_template.format(output_dir=quote(folder, safe=""))
    return folder_url(folder)
