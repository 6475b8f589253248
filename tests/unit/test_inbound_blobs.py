"""Inbound mail, blobs: a name only ever points at whole bytes."""

from __future__ import annotations

from pathlib import Path

from mailbridge.services.inbound._blobs import (
    blob_name,
    blob_path,
    cache_blobs,
    read_blob,
    read_verified,
    settle_blobs,
    stage_blob,
    write_blob,
)


def test_a_group_settles_under_its_names_and_settling_again_is_harmless(tmp_path: Path) -> None:
    staged = [stage_blob(b"message %d" % number) for number in range(40)]
    staged.append(stage_blob(b"message 0"))  # the same bytes twice in a group
    assert not (tmp_path / "blobs").exists()  # staging touches no file
    settle_blobs(tmp_path, staged)
    settle_blobs(tmp_path, staged)
    files = [path for path in (tmp_path / "blobs").rglob("*") if path.is_file()]
    assert len(files) == 40
    assert all(blob_name(path.read_bytes()) == path.name for path in files)
    assert read_blob(tmp_path, staged[7].name) == b"message 7"


def test_a_short_or_missing_cached_blob_reads_as_none(tmp_path: Path) -> None:
    blob = stage_blob(b"an attachment")
    assert read_verified(tmp_path, blob.name) is None
    cache_blobs(tmp_path, [blob])
    assert read_verified(tmp_path, blob.name) == b"an attachment"
    blob_path(tmp_path, blob.name).write_bytes(b"an att")  # a crash before the kernel wrote it
    assert read_verified(tmp_path, blob.name) is None
    cache_blobs(tmp_path, [blob])  # left alone without replace
    assert read_verified(tmp_path, blob.name) is None
    cache_blobs(tmp_path, [blob], replace=True)
    assert read_verified(tmp_path, blob.name) == b"an attachment"


def test_blobs_of_the_first_layout_are_still_read(tmp_path: Path) -> None:
    name = blob_name(b"old")
    old = tmp_path / "blobs" / name[:2] / name[2:4] / name
    old.parent.mkdir(parents=True)
    old.write_bytes(b"old")
    assert read_blob(tmp_path, name) == b"old"
    assert write_blob(tmp_path, b"old") == name  # stored already: not written twice
    assert not blob_path(tmp_path, name).exists()
