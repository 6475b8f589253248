"""The official Resend SDK's templates module against a real ``mailbridge serve``."""

from __future__ import annotations

import pytest
import resend
import resend.exceptions

from tests.acceptance.conftest import Server


def test_sdk_manages_templates_from_draft_to_removal(sdk: Server) -> None:
    created = resend.Templates.create(
        {
            "name": "Order shipped",
            "alias": "order-shipped",
            "from": "Shop <orders@shop.io>",
            "subject": "Order {{{ORDER_ID}}} shipped",
            "reply_to": ["help@shop.io"],
            "html": "<p>Hi {{{FIRST_NAME|there}}}, order {{{ORDER_ID}}} is on its way.</p>",
            "text": "Order {{{ORDER_ID}}} is on its way.",
            "variables": [
                {"key": "ORDER_ID", "type": "string", "fallback_value": "(unknown)"},
                {"key": "ITEMS", "type": "number"},
            ],
        }
    )
    assert created["object"] == "template"
    template_id = created["id"]

    fetched = resend.Templates.get(template_id)
    assert fetched["id"] == template_id and fetched["object"] == "template"
    assert fetched["status"] == "draft" and fetched["alias"] == "order-shipped"
    assert fetched["from"] == "Shop <orders@shop.io>" and fetched["reply_to"] == ["help@shop.io"]
    assert fetched["variables"] == [
        {"key": "ORDER_ID", "type": "string", "fallback_value": "(unknown)"},
        {"key": "ITEMS", "type": "number", "fallback_value": None},
    ]
    assert resend.Templates.get("order-shipped")["id"] == template_id

    published = resend.Templates.publish(template_id)
    assert published["id"] == template_id and published["object"] == "template"
    assert resend.Templates.get(template_id)["status"] == "published"

    updated = resend.Templates.update({"id": template_id, "subject": "Shipped: {{{ORDER_ID}}}"})
    assert updated["id"] == template_id and updated["object"] == "template"
    draft = resend.Templates.get(template_id)
    assert draft["subject"] == "Shipped: {{{ORDER_ID}}}"
    assert draft["status"] == "draft" and draft["published_at"] is not None

    duplicate = resend.Templates.duplicate("order-shipped")
    assert duplicate["object"] == "template" and duplicate["id"] != template_id
    copy = resend.Templates.get(duplicate["id"])
    assert copy["name"] == "Order shipped (copy)" and copy["alias"] is None
    assert copy["subject"] == draft["subject"]

    listed = resend.Templates.list()
    assert listed["object"] == "list" and listed["has_more"] is False
    assert [item["id"] for item in listed["data"]] == [duplicate["id"], template_id]
    assert listed["data"][1]["status"] == "draft" and listed["data"][1]["alias"] == "order-shipped"
    paged = resend.Templates.list({"limit": 1})
    assert paged["has_more"] is True and [item["id"] for item in paged["data"]] == [duplicate["id"]]
    after = resend.Templates.list({"limit": 1, "after": duplicate["id"]})
    assert [item["id"] for item in after["data"]] == [template_id]

    removed = resend.Templates.remove(template_id)
    assert (removed["object"], removed["id"], removed["deleted"]) == ("template", template_id, True)
    with pytest.raises(resend.exceptions.ResendError) as gone:
        resend.Templates.get(template_id)
    assert gone.value.code == 404 and gone.value.error_type == "not_found"
    assert [item["id"] for item in resend.Templates.list()["data"]] == [duplicate["id"]]
    assert sdk.stop() == 0


def test_sdk_surfaces_template_validation_errors(sdk: Server) -> None:
    with pytest.raises(resend.exceptions.ValidationError) as undeclared:
        resend.Templates.create({"name": "Bad", "html": "<p>{{{MISSING_ONE}}}</p>"})
    assert undeclared.value.code == 422 and "MISSING_ONE" in undeclared.value.message
    assert resend.Templates.list()["data"] == []
