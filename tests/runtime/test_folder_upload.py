"""A host's folder to its place under output_dir, within a cap: locally and through the GCS
emulator, what matters first, and what the cap cut named."""

from __future__ import annotations

from airflow_provider_jax.runtime import stores
from airflow_provider_jax.runtime.folder_upload import CUT_FILE, upload_folder


def host_folder(tmp_path):
    folder = tmp_path / "host"
    (folder / "xla").mkdir(parents=True)
    (folder / "stacks.txt").write_text("s" * 300)
    for i in range(5):
        (folder / "xla" / f"module_{i}.txt").write_text("h" * (100 * (i + 1)))
    return folder


def test_everything_under_the_cap_goes_with_its_names(tmp_path):
    sent = upload_folder(host_folder(tmp_path), str(tmp_path / "out"), cap_bytes=10_000)
    assert (sent.files, sent.bytes, sent.cut) == (6, 1800, [])
    assert (tmp_path / "out" / "xla" / "module_4.txt").read_text() == "h" * 500
    assert not (tmp_path / "out" / CUT_FILE).exists()


def test_the_cap_keeps_what_comes_first_then_the_smallest_and_names_the_rest(gcs_bucket, tmp_path):
    uri = f"gs://{gcs_bucket}/debug/try-1/host-0"
    sent = upload_folder(host_folder(tmp_path), uri, cap_bytes=700, first=("stacks.txt",))
    assert (sent.files, sent.bytes) == (3, 600)  # stacks (300), then modules 0 and 1
    assert [name for name, _ in sent.cut] == [f"xla/module_{i}.txt" for i in (2, 3, 4)]
    where = stores.parse_location(uri)
    listed = stores.store_for(where).list(where)
    assert sorted(listed) == [CUT_FILE, "stacks.txt", "xla/module_0.txt", "xla/module_1.txt"]
    note = stores.read_text(f"{uri}/{CUT_FILE}")
    assert "3 file(s), 0.0 MiB, were not uploaded" in note and "xla/module_4.txt" in note
    assert "cut by the 0.0 MiB cap" in sent.summary(uri, 700)
