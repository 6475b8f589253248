"""The official Resend Python SDK, pointed at mailbridge, works as against the original."""

from __future__ import annotations

import pytest
import resend
import resend.exceptions

from tests.acceptance.conftest import Server


def test_sdk_lists_api_keys(sdk: Server) -> None:
    second = sdk.create_key()
    listed = resend.ApiKeys.list()
    assert listed["object"] == "list"
    assert listed["has_more"] is False
    ids = [item["id"] for item in listed["data"]]
    assert second["id"] == ids[0] and len(ids) == 2
    assert all(item["name"] == "acceptance" for item in listed["data"])
    paged = resend.ApiKeys.list({"limit": 1})
    assert paged["has_more"] is True and len(paged["data"]) == 1


def test_sdk_raises_its_typed_errors(sdk: Server) -> None:
    resend.api_key = "mb_AAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
    with pytest.raises(resend.exceptions.InvalidApiKeyError) as invalid:
        resend.ApiKeys.list()
    assert invalid.value.code == 403 and invalid.value.error_type == "invalid_api_key"

    resend.api_key = ""
    with pytest.raises(resend.exceptions.MissingApiKeyError) as missing:
        resend.ApiKeys.list()
    assert missing.value.code == 401

    resend.api_key = sdk.create_key()["token"]
    with pytest.raises(resend.exceptions.ValidationError) as invalid_page:
        resend.ApiKeys.list({"limit": 500})
    assert invalid_page.value.code == 422

    with pytest.raises(resend.exceptions.ResendError) as dashboard:
        resend.ApiKeys.create({"name": "from the sdk"})
    assert dashboard.value.code == 403 and dashboard.value.error_type == "dashboard_only"
    assert sdk.stop() == 0
