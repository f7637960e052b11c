"""The TensorBoard link: only when ``[jax] tensorboard_url`` is set and the run's output_dir
holds event files, locally and on GCS (the emulator)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from airflow_provider_jax.links.tensorboard import TensorBoardLink, tensorboard_url
from tests.support.xcoms import xcoms

TEMPLATE = "https://tensorboard.example.com/?logdir={output_dir}"
LINK_KEY = TensorBoardLink().xcom_key


def test_a_local_output_dir_with_event_files_gets_the_link(tmp_path):
    assert tensorboard_url(TEMPLATE, str(tmp_path)) == ""  # nothing written yet
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "metrics.json").write_text("{}")
    assert tensorboard_url(TEMPLATE, str(tmp_path)) == ""  # no event file
    (tmp_path / "tb" / "train").mkdir(parents=True)
    (tmp_path / "tb" / "train" / "events.out.tfevents.1763942400.host-0").write_bytes(b"")
    url = tensorboard_url(TEMPLATE, str(tmp_path))
    assert url == "https://tensorboard.example.com/?logdir=" + str(tmp_path).replace("/", "%2F")


def test_no_template_or_no_output_dir_is_no_link(tmp_path):
    (tmp_path / "events.out.tfevents.1.host").write_bytes(b"")
    assert tensorboard_url(None, str(tmp_path)) == ""
    assert tensorboard_url(TEMPLATE, None) == ""


def test_a_gcs_output_dir_with_event_files_gets_the_link(gcs_emulator, gcs_bucket):
    output_dir = f"gs://{gcs_bucket}/nightly/20261124"
    gcs_emulator.put_objects(
        gcs_bucket,
        [
            ("nightly/20261124/checkpoints/10/_CHECKPOINT_METADATA", b"{}"),
            ("nightly/20261123/tb/events.out.tfevents.1.host-0", b""),  # another run's
        ],
    )
    assert tensorboard_url(TEMPLATE, output_dir) == ""
    gcs_emulator.put_objects(
        gcs_bucket, [("nightly/20261124/tb/plugins/profile/events.out.tfevents.2.host-0", b"")]
    )
    assert tensorboard_url(TEMPLATE, output_dir).endswith(
        "logdir=gs%3A%2F%2F" + gcs_bucket + "%2Fnightly%2F20261124"
    )


DAG_FILE = """
from airflow.sdk import DAG
from airflow_provider_jax.operators import JaxTpuSliceOperator

WRITE = (
    "import pathlib; d = pathlib.Path('{output_dir}') / 'tb';"
    " d.mkdir(parents=True, exist_ok=True); (d / 'events.out.tfevents.1.host').write_bytes(b'')"
)
with DAG("tensorboard_link", schedule=None):
    JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",
        image="ignored-locally",
        command=["python3", "-c", WRITE],
        output_dir="{output_dir}",
    )
"""


@pytest.mark.slow  # a real DAG run, then the link read as the UI reads it
def test_a_run_that_wrote_event_files_gets_the_link_in_the_ui(airflow_home, tmp_path):
    """For real: ``airflow dags test`` on the local backend; the link's XCom is what the
    UI's extra-link endpoint returns."""
    dags, output_dir = tmp_path / "dags", tmp_path / "out"
    dags.mkdir()
    dag_file = DAG_FILE.format(output_dir=output_dir)
    (dags / "tensorboard_link.py").write_text(dag_file)
    run = airflow_home.airflow(
        "dags",
        "test",
        "tensorboard_link",
        dags_folder=dags,
        env={"AIRFLOW__JAX__DEFAULT_BACKEND": "local", "AIRFLOW__JAX__TENSORBOARD_URL": TEMPLATE},
    )
    assert run.returncode == 0, run.stdout[-4000:]
    links = xcoms(airflow_home.path / "airflow.db", "tensorboard_link", "train", LINK_KEY)
    assert list(links.values()) == [TEMPLATE.format(output_dir=quote(str(output_dir), safe=""))]
