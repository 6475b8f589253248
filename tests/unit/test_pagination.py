from __future__ import annotations

import pytest

from mailbridge.errors import ValidationError
from mailbridge.storage.pagination import PageRequest


def test_defaults() -> None:
    assert PageRequest.parse() == PageRequest(limit=20)


@pytest.mark.parametrize("limit", ["0", "101", "x", "", "2.0"])
def test_limit_must_be_1_to_100(limit: str) -> None:
    with pytest.raises(ValidationError):
        PageRequest.parse(limit=limit)


def test_cursors_exclude_each_other() -> None:
    with pytest.raises(ValidationError):
        PageRequest.parse(after="a", before="b")
    assert PageRequest.parse(before="b").cursor == "b"
    assert PageRequest.parse(after="a", limit="100") == PageRequest(100, "a", None)
