"""Content-addressed blobs under ``<data dir>/blobs``: the raw received messages and their
attachments, named by the SHA-256 of their bytes, durable before anything refers to them.

A blob is written in two steps, so that the slow part is paid once for many messages:
:func:`stage_blob` names the bytes (a hash, on the event loop), and :func:`settle_blobs`
— for a whole group of messages, just before the group's rows commit, many blobs at
once on threads of its own — writes each to a temporary file, fsyncs it, renames it to
its name, and fsyncs each directory that got a name. A name therefore only ever points
at synced bytes: a blob found under its name is whole (a crash before the rename leaves
only a temporary file behind, and the sender, who heard no 250, sends again). No file
is touched on the event loop: creating one waits on the filesystem's journal while
other files sync (much of the listener's time when it did).

Attachments are also in their message's raw blob, so theirs are a cache: written after
the 250 without a sync (:func:`cache_blobs`), checked against their name when read
(:func:`read_verified`), and made again from the message when missing or short.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class StagedBlob:
    """A blob on its way to its name."""

    name: str
    data: bytes = field(repr=False)


def blob_name(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_path(root: Path, name: str) -> Path:
    """One level of 256 folders (as git's objects): after the first few hundred blobs every
    folder exists, and storing a blob syncs its folder only, never a new one's parent."""
    return root / "blobs" / name[:2] / name


def _first_layout_path(root: Path, name: str) -> Path:
    """Where blobs stored before the flatter layout are (two levels)."""
    return root / "blobs" / name[:2] / name[2:4] / name


def stage_blob(data: bytes) -> StagedBlob:
    return StagedBlob(blob_name(data), data)


SYNC_THREADS = 16  # blobs stored at once: the filesystem commits concurrent syncs together
_sync_threads: ThreadPoolExecutor | None = None


def _threads() -> ThreadPoolExecutor:
    global _sync_threads
    if _sync_threads is None:
        _sync_threads = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="inbound-blobs")
    return _sync_threads


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _store(root: Path, blob: StagedBlob) -> set[Path]:
    """One blob under its name, synced; the directories that learned a name."""
    path = blob_path(root, blob.name)
    if path.exists():
        return set()
    named = {path.parent}
    if not path.parent.exists():
        for folder in (path.parent.parent, path.parent):
            if not folder.exists():  # a new folder: its parent learns a name too
                named.add(folder.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
    elif _first_layout_path(root, blob.name).exists():
        return set()
    # Unique to this write: another listener may store the same bytes at once.
    temporary = path.with_name(f".{blob.name}.{uuid.uuid4().hex}.tmp")
    with temporary.open("wb") as handle:
        handle.write(blob.data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return named


def settle_blobs(root: Path, blobs: Sequence[StagedBlob]) -> None:
    """Store staged blobs durably under their names (blocking: run it in a thread), many
    at once. A blob stored already is left as it is: same name, same bytes."""
    unique = list({blob.name: blob for blob in blobs}.values())
    if len(unique) == 1:
        named = _store(root, unique[0])
    else:
        named = set().union(*_threads().map(lambda blob: _store(root, blob), unique))
    # Deepest first: a new folder's own entries are synced before its parent names it.
    for depth in sorted({len(folder.parts) for folder in named}, reverse=True):
        list(_threads().map(_fsync, [folder for folder in named if len(folder.parts) == depth]))


def cache_blobs(root: Path, blobs: Sequence[StagedBlob], *, replace: bool = False) -> None:
    """Store blobs that can be made again from others (an attachment, from its message)
    without syncing them (blocking): a crash may leave one missing or short, and
    :func:`read_verified` says so. ``replace``: over one found short."""
    for blob in {blob.name: blob for blob in blobs}.values():
        path = blob_path(root, blob.name)
        if path.exists() and not replace:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{blob.name}.{uuid.uuid4().hex}.tmp")
        temporary.write_bytes(blob.data)
        os.replace(temporary, path)


def read_verified(root: Path, name: str) -> bytes | None:
    """A blob's bytes if they are there and whole (their hash is their name), else None."""
    try:
        data = read_blob(root, name)
    except FileNotFoundError:
        return None
    return data if blob_name(data) == name else None


def write_blob(root: Path, data: bytes) -> str:
    """Store ``data`` durably at once (blocking); its name."""
    staged = stage_blob(data)
    settle_blobs(root, [staged])
    return staged.name


def read_blob(root: Path, name: str) -> bytes:
    try:
        return blob_path(root, name).read_bytes()
    except FileNotFoundError:
        return _first_layout_path(root, name).read_bytes()
