"""Content-addressed blobs under ``<data dir>/blobs``: the raw received messages and their
attachments, named by the SHA-256 of their bytes, written durably before anything
refers to them (the file and its directory are fsynced, then the row commits)."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path


def blob_name(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_path(root: Path, name: str) -> Path:
    return root / "blobs" / name[:2] / name[2:4] / name


def write_blob(root: Path, data: bytes) -> str:
    """Store ``data`` (blocking: run it in a thread); its name. A blob stored already is
    left as it is: same name, same bytes."""
    name = blob_name(data)
    path = blob_path(root, name)
    if path.exists():
        return name
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique to this write: two messages carrying the same attachment may store it at once.
    temporary = path.with_name(f".{name}.{uuid.uuid4().hex}.tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return name


def read_blob(root: Path, name: str) -> bytes:
    return blob_path(root, name).read_bytes()
