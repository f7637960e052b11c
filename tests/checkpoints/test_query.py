"""The finalized-step search, against real Orbax saves in the GCS emulator and on local disk.

Every GCS test runs twice: through the sync driver (``GCSHook``, used by ``poke``) and the async
one (``GCSAsyncHook``, used by the trigger).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_provider_jax.checkpoints import (
    DEFAULT_RETRY,
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    RetryPolicy,
    StepNameFormat,
    StorageUnavailableError,
    afind_newest_finalized,
    find_newest_finalized,
)
from airflow_provider_jax.hooks.retry import ExponentialJitter
from harness.gcs_emulator import GcsEmulator
from tests.support.orbax_saves import MULTI_ITEM_PREFIXED_PADDED, SINGLE_ITEM, Layout, save_steps

LAYOUTS = pytest.mark.parametrize(
    "layout",
    [SINGLE_ITEM, MULTI_ITEM_PREFIXED_PADDED],
    ids=["single-item", "multi-item-prefixed-padded"],
)
FAST_RETRY = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)

Find = Callable[..., FinalizedStep | None]


@pytest.fixture(params=["sync", "async"])
def find(request: pytest.FixtureRequest) -> Find:
    if request.param == "sync":
        return find_newest_finalized

    def find_async(query: CheckpointQuery, retry: RetryPolicy = DEFAULT_RETRY):
        return asyncio.run(afind_newest_finalized(query, retry))

    return find_async


# --- step names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "name", "step"),
    [
        (StepNameFormat(), "0", 0),
        (StepNameFormat(), "1200", 1200),
        (StepNameFormat(), "007", None),  # orbax writes no padding unless asked
        (StepNameFormat(), "12.orbax-checkpoint-tmp", None),
        (StepNameFormat(), "12.orbax-checkpoint-tmp-1700000000", None),
        (StepNameFormat(), "ckpt_12", None),
        (StepNameFormat(step_prefix="ckpt"), "ckpt_12", 12),
        (StepNameFormat(step_prefix="ckpt"), "12", None),
        (StepNameFormat(step_prefix="ckpt"), "ckpt12", None),
        (StepNameFormat(step_prefix="a.b"), "axb_12", None),
        (StepNameFormat(step_format_fixed_length=4), "0012", 12),
        (StepNameFormat(step_format_fixed_length=4), "12345", 12345),
        (StepNameFormat(step_format_fixed_length=4), "012", None),
        (StepNameFormat(step_format_fixed_length=4), "00123", None),
        (StepNameFormat("ckpt", 6), "ckpt_000042", 42),
        (StepNameFormat("ckpt", 6), "ckpt_000042.orbax-checkpoint-tmp", None),
    ],
)
def test_step_names_parse_like_orbax(names: StepNameFormat, name: str, step: int | None) -> None:
    assert names.parse(name) == step
    if step is not None:
        assert names.build(step) == name


def test_step_name_format_rejects_bad_length() -> None:
    with pytest.raises(ValueError, match="positive"):
        StepNameFormat(step_format_fixed_length=0)


def test_gcs_location_parses_bucket_and_prefix() -> None:
    where = CheckpointQuery("gs://bkt").location
    assert (where.bucket, where.prefix) == ("bkt", "")
    where = CheckpointQuery("gs://bkt/a/b/").location
    assert (where.bucket, where.prefix) == ("bkt", "a/b/")
    assert str(CheckpointQuery("gs://bkt/a/b").location.join("7")) == "gs://bkt/a/b/7"
    with pytest.raises(CheckpointDirError):
        CheckpointQuery("gs:///no-bucket").location  # noqa: B018


def test_xcom_value_is_iso_utc() -> None:
    found = FinalizedStep(3, "gs://b/r/3", datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert found.to_xcom() == {
        "step": 3,
        "path": "gs://b/r/3",
        "finalized_at": "2025-01-02T03:04:05+00:00",
    }


def test_retry_delays_grow_and_stay_bounded() -> None:
    wait = ExponentialJitter(first=1, cap=4)
    for attempt, ceiling in enumerate([1, 2, 4, 4, 4], start=1):
        assert ceiling / 2 <= wait.delay(attempt) <= ceiling


# --- GCS, real Orbax saves ----------------------------------------------------------------------


def _step_marker(root: str, layout: Layout, step: int) -> str:
    return f"{CheckpointQuery(root).location.prefix}{layout.step_name(step)}/commit_success.txt"


@LAYOUTS
def test_gcs_finds_newest_finalized_step(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find, layout: Layout
) -> None:
    import orbax.checkpoint as ocp

    root = f"gs://{gcs_bucket}/runs/llm"
    save_steps(root, [5, 10, 15], layout)

    found = find(CheckpointQuery(root, **layout.sensor_kwargs))

    marker_time = gcs_emulator.updated(gcs_bucket, _step_marker(root, layout, 15))
    assert found == FinalizedStep(15, f"{root}/{layout.step_name(15)}", marker_time)
    options = ocp.CheckpointManagerOptions(read_only=True, **layout.sensor_kwargs)
    with ocp.CheckpointManager(root, item_names=layout.items, options=options) as manager:
        assert manager.latest_step() == found.step  # orbax agrees


@LAYOUTS
def test_gcs_min_step_picks_newest_not_first_match(
    gcs_bucket: str, find: Find, layout: Layout
) -> None:
    root = f"gs://{gcs_bucket}/run"
    save_steps(root, [1, 2, 3], layout)

    assert find(CheckpointQuery(root, min_step=2, **layout.sensor_kwargs)).step == 3
    assert find(CheckpointQuery(root, min_step=3, **layout.sensor_kwargs)).step == 3
    assert find(CheckpointQuery(root, min_step=4, **layout.sensor_kwargs)) is None


def test_gcs_never_reports_partial_saves(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find
) -> None:
    root = f"gs://{gcs_bucket}/run"
    save_steps(root, [1, 2])
    # Step 3 dies right before finalizing: data and item-level markers, no top-level marker.
    gcs_emulator.reject_uploads("run/3/commit_success.txt")
    with pytest.raises(OSError, match="Forbidden"):
        save_steps(root, [3])
    # Step 4 dies while writing item data: some files, no markers at all.
    gcs_emulator.reject_uploads("run/4/default/_METADATA")
    with pytest.raises(Exception, match=r"Forbidden|403"):
        save_steps(root, [4])
    # Temporary directories (local-style names, as gcsfuse or older orbax leave them), even
    # with a marker inside.
    gcs_emulator.copy_prefix(gcs_bucket, "run/2/", "run/5.orbax-checkpoint-tmp/")
    gcs_emulator.copy_prefix(gcs_bucket, "run/2/", "run/6.orbax-checkpoint-tmp-1700000000/")

    step3 = gcs_emulator.object_names(gcs_bucket, "run/3/")
    assert "run/3/default/commit_success.txt" in step3
    assert "run/3/_CHECKPOINT_METADATA" in step3
    assert "run/3/commit_success.txt" not in step3
    step4 = gcs_emulator.object_names(gcs_bucket, "run/4/")
    assert step4 and not any(name.endswith("commit_success.txt") for name in step4)

    assert find(CheckpointQuery(root)).step == 2
    assert find(CheckpointQuery(root, min_step=3)) is None


@pytest.mark.parametrize(
    "deleted",
    [
        pytest.param(lambda name: name.endswith("/2/commit_success.txt"), id="marker-first"),
        pytest.param(lambda name: not name.endswith("/2/commit_success.txt"), id="marker-last"),
        pytest.param(lambda name: "/2/default/" in name, id="items-gone"),
    ],
)
def test_gcs_skips_step_being_deleted(
    gcs_emulator: GcsEmulator,
    gcs_bucket: str,
    find: Find,
    deleted: Callable[[str], bool],
) -> None:
    root = f"gs://{gcs_bucket}/run"
    save_steps(root, [1, 2])
    step2 = gcs_emulator.object_names(gcs_bucket, "run/2/")
    gcs_emulator.delete_objects(gcs_bucket, [name for name in step2 if deleted(name)])

    assert find(CheckpointQuery(root)).step == 1


def test_gcs_marker_vanishing_after_listing_is_not_reported(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find
) -> None:
    root = f"gs://{gcs_bucket}/run"
    save_steps(root, [1, 2])
    gone: list[str] = []

    def delete_marker() -> None:
        gcs_emulator.delete_objects(gcs_bucket, ["run/2/commit_success.txt"])
        gone.append("run/2/commit_success.txt")

    # Step 2 is listed as a directory, then loses its marker before it is checked.
    gcs_emulator.after(lambda r: r.is_list and r.param("prefix") == "run/", delete_marker)

    assert find(CheckpointQuery(root)).step == 1
    assert gone


def _fake_steps(
    emulator: GcsEmulator, bucket: str, steps: range, files_per_step: int, unfinalized: int
) -> None:
    """Steps shaped like Orbax's, written straight into the emulator (fast)."""
    newest = max(steps)
    objects = []
    for step in steps:
        objects.append((f"run/{step}/_CHECKPOINT_METADATA", b"{}"))
        objects += [(f"run/{step}/default/d/{i:04d}", b"x") for i in range(files_per_step - 2)]
        if step <= newest - unfinalized:
            objects.append((f"run/{step}/commit_success.txt", b"ok"))
    emulator.put_objects(bucket, objects)


@pytest.mark.parametrize("files_per_step", [3, 300])
def test_gcs_requests_do_not_grow_with_files_per_step(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find, files_per_step: int
) -> None:
    _fake_steps(gcs_emulator, gcs_bucket, range(1, 21), files_per_step, unfinalized=1)

    assert find(CheckpointQuery(f"gs://{gcs_bucket}/run")).step == 19
    # One root page, then step 20 (unfinalized) and step 19: one request each.
    prefixes = [r.param("prefix") for r in gcs_emulator.list_requests(gcs_bucket)]
    assert prefixes == ["run/", "run/20/", "run/19/"]


def test_gcs_follows_pages(gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find) -> None:
    gcs_emulator.max_page_size = 2  # GCS pages at 1,000; the stock emulator never pages
    _fake_steps(gcs_emulator, gcs_bucket, range(1, 10), files_per_step=4, unfinalized=0)
    gcs_emulator.put_objects(
        gcs_bucket,
        # Root objects and a temporary dir share the root pages with the steps...
        [("run/_ROOT_METADATA", b"{}"), ("run/9.orbax-checkpoint-tmp/x", b"x")]
        # ...and step 9's marker comes after a full page of other top-level files.
        + [(f"run/9/_extra_{i}", b"x") for i in range(3)],
    )

    assert find(CheckpointQuery(f"gs://{gcs_bucket}/run")).step == 9

    requests = gcs_emulator.list_requests(gcs_bucket)
    root_pages = [r for r in requests if r.param("prefix") == "run/"]
    step9_pages = [r for r in requests if r.param("prefix") == "run/9/"]
    assert len(root_pages) == 6  # 9 steps + 2 other entries, 2 per page
    assert len(step9_pages) == 3  # 5 objects + 1 item dir: marker and item on page 3
    assert all(r.param("pageToken") for r in root_pages[1:] + step9_pages[1:])
    assert {r.param("prefix") for r in requests} == {"run/", "run/9/"}


def test_gcs_missing_bucket_fails_at_once(gcs_emulator: GcsEmulator, find: Find) -> None:
    gcs_emulator.reset()
    with pytest.raises(CheckpointDirError, match="bucket 'no-such-bucket' does not exist"):
        find(CheckpointQuery("gs://no-such-bucket/run"))
    assert len(gcs_emulator.list_requests("no-such-bucket")) == 1


def test_gcs_forbidden_fails_at_once(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find
) -> None:
    gcs_emulator.fail_next(403, times=10)
    with pytest.raises(CheckpointDirError, match=r"HTTP 403.*'google_cloud_default'"):
        find(CheckpointQuery(f"gs://{gcs_bucket}/run"))
    assert len(gcs_emulator.list_requests(gcs_bucket)) == 1


def test_gcs_missing_directory_is_not_yet(gcs_bucket: str, find: Find) -> None:
    assert find(CheckpointQuery(f"gs://{gcs_bucket}/not/written/yet")) is None


@pytest.mark.parametrize("status", [429, 503])
def test_gcs_transient_errors_are_retried(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find, status: int
) -> None:
    _fake_steps(gcs_emulator, gcs_bucket, range(1, 4), files_per_step=3, unfinalized=0)
    gcs_emulator.fail_next(status, times=2, matches=lambda r: r.is_list)

    assert find(CheckpointQuery(f"gs://{gcs_bucket}/run"), FAST_RETRY).step == 3
    assert len(gcs_emulator.list_requests(gcs_bucket)) == 2 + 2


def test_gcs_transient_errors_give_up_after_attempts(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find
) -> None:
    gcs_emulator.fail_next(503, times=100)
    with pytest.raises(StorageUnavailableError, match="failed 3 times"):
        find(CheckpointQuery(f"gs://{gcs_bucket}/run"), FAST_RETRY)
    assert len(gcs_emulator.list_requests(gcs_bucket)) == 3


# --- local disk, real Orbax saves ---------------------------------------------------------------


def _remove_markers(step_dir: Path) -> None:
    for marker in step_dir.rglob("commit_success.txt"):
        marker.unlink()


@LAYOUTS
def test_local_finds_newest_finalized_step(tmp_path: Path, find: Find, layout: Layout) -> None:
    save_steps(str(tmp_path), [5, 10, 15], layout)

    found = find(CheckpointQuery(str(tmp_path), **layout.sensor_kwargs))

    step_dir = tmp_path / layout.step_name(15)
    marker_time = datetime.fromtimestamp((step_dir / "commit_success.txt").stat().st_mtime, UTC)
    assert found == FinalizedStep(15, str(step_dir), marker_time)
    assert find(CheckpointQuery(str(tmp_path), min_step=16, **layout.sensor_kwargs)) is None


def test_local_skips_temporary_directories(tmp_path: Path, find: Find) -> None:
    save_steps(str(tmp_path), [1, 2])
    # Since 0.12.3 the marker is written before the rename, so a leftover tmp dir has one.
    shutil.copytree(tmp_path / "2", tmp_path / "3.orbax-checkpoint-tmp")
    shutil.copytree(tmp_path / "2", tmp_path / "4.orbax-checkpoint-tmp-1700000000")
    assert (tmp_path / "3.orbax-checkpoint-tmp" / "commit_success.txt").exists()

    assert find(CheckpointQuery(str(tmp_path))).step == 2


def test_local_before_0_12_3_counts_renamed_steps_only_when_allowed(
    tmp_path: Path, find: Find
) -> None:
    save_steps(str(tmp_path), [1, 2, 3])
    for step_dir in tmp_path.iterdir():
        _remove_markers(step_dir)  # what orbax < 0.12.3 left on local disk
    shutil.copytree(tmp_path / "3", tmp_path / "4.orbax-checkpoint-tmp-1700000000")
    os.utime(tmp_path / "3", (1_700_000_000, 1_700_000_000))
    legacy = CheckpointQuery(str(tmp_path), allow_legacy_atomic_rename=True)

    found = find(legacy)

    assert found == FinalizedStep(
        3, str(tmp_path / "3"), datetime.fromtimestamp(1_700_000_000, UTC)
    )
    assert find(CheckpointQuery(str(tmp_path), min_step=4, allow_legacy_atomic_rename=True)) is None
    # As in Orbax (AtomicityOptions), off by default: CommitFileTemporaryPath's step being
    # written looks the same (tests/checkpoints/test_saves_in_flight.py).
    assert find(CheckpointQuery(str(tmp_path))) is None


def test_gcs_never_counts_a_step_without_its_marker(
    gcs_emulator: GcsEmulator, gcs_bucket: str, find: Find
) -> None:
    root = f"gs://{gcs_bucket}/run"
    save_steps(root, [1, 2])
    gcs_emulator.delete_objects(gcs_bucket, ["run/2/commit_success.txt"])

    # A "rename" on GCS copies object by object: Orbax's legacy rule can't apply there.
    assert find(CheckpointQuery(root, allow_legacy_atomic_rename=True)).step == 1


@pytest.mark.parametrize("deleted", ["marker-first", "items-gone"])
def test_local_skips_step_being_deleted(tmp_path: Path, find: Find, deleted: str) -> None:
    save_steps(str(tmp_path), [1, 2])
    if deleted == "marker-first":
        (tmp_path / "2" / "commit_success.txt").unlink()
    else:
        shutil.rmtree(tmp_path / "2" / "default")

    assert find(CheckpointQuery(str(tmp_path))).step == 1


def test_local_missing_directory_is_not_yet(tmp_path: Path, find: Find) -> None:
    assert find(CheckpointQuery(str(tmp_path / "not-yet"))) is None


def test_local_file_instead_of_directory_fails(tmp_path: Path, find: Find) -> None:
    (tmp_path / "ckpt").write_text("oops")
    with pytest.raises(CheckpointDirError, match="not a directory"):
        find(CheckpointQuery(str(tmp_path / "ckpt")))


def test_other_schemes_are_rejected(find: Find) -> None:
    with pytest.raises(CheckpointDirError, match="gs://"):
        find(CheckpointQuery("s3://bucket/run"))
