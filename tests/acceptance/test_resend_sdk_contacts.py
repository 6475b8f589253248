"""The official Resend SDK manages audiences, contacts, properties and topics on mailbridge.

SDK 2.x turned ``resend.Audiences`` into an alias of ``resend.Segments`` (it calls
``/segments``); the ``/audiences`` endpoints are reached through the SDK's own request
layer, the same code its resource classes use.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import resend
import resend.exceptions
from resend.request import Request

from tests.acceptance.conftest import Server


def call(path: str, verb: Any, params: Any = None) -> Any:
    return Request[Any](path, {} if params is None else params, verb).perform_with_content()


def test_sdk_manages_audiences_and_their_contacts(sdk: Server) -> None:
    audience = call("/audiences", "post", {"name": "Newsletter"})
    assert audience["object"] == "audience" and audience["name"] == "Newsletter"
    audience_id = audience["id"]
    assert call(f"/audiences/{audience_id}", "get")["name"] == "Newsletter"
    assert [item["id"] for item in call("/audiences", "get")["data"]] == [audience_id]

    created = resend.Contacts.create(
        {"audience_id": audience_id, "email": "Steve@Mail.net", "first_name": "Steve"}
    )
    assert created["object"] == "contact"
    contact = resend.Contacts.get(audience_id=audience_id, email="steve@mail.net")
    assert contact["id"] == created["id"] and contact["email"] == "steve@mail.net"
    updated = resend.Contacts.update(
        {"audience_id": audience_id, "id": created["id"], "last_name": "W", "unsubscribed": True}
    )
    assert updated["id"] == created["id"]
    listed = resend.Contacts.list(audience_id=audience_id)
    assert [(c["last_name"], c["unsubscribed"]) for c in listed["data"]] == [("W", True)]

    with pytest.raises(resend.exceptions.ResendError) as duplicate:
        resend.Contacts.create({"audience_id": audience_id, "email": "steve@mail.net"})
    assert duplicate.value.code == 409 and duplicate.value.error_type == "contact_exists"

    removed = resend.Contacts.remove(audience_id=audience_id, email="steve@mail.net")
    assert removed["deleted"] is True and removed["contact"] == created["id"]
    assert resend.Contacts.list(audience_id=audience_id)["data"] == []
    gone = call(f"/audiences/{audience_id}", "delete")
    assert (gone["object"], gone["id"], gone["deleted"]) == ("audience", audience_id, True)


def test_sdk_manages_global_contacts_properties_and_topics(sdk: Server) -> None:
    prop = resend.ContactProperties.create(
        {"key": "company", "type": "string", "fallback_value": "n/a"}
    )
    assert prop["object"] == "contact_property"
    assert resend.ContactProperties.get(prop["id"])["key"] == "company"
    resend.ContactProperties.update({"id": prop["id"], "fallback_value": "none"})
    [listed_prop] = resend.ContactProperties.list()["data"]
    assert listed_prop["fallback_value"] == "none"

    topic = resend.Topics.create(
        {"name": "Product news", "default_subscription": "opt_in", "description": "Monthly"}
    )
    resend.Topics.update(topic["id"], {"name": "Product updates"})
    assert resend.Topics.get(topic["id"])["name"] == "Product updates"
    assert [t["id"] for t in resend.Topics.list()["data"]] == [topic["id"]]

    created = resend.Contacts.create(
        {"email": "ada@mail.net", "first_name": "Ada", "properties": {"company": "Acme"}}
    )
    got = resend.Contacts.get(email="ada@mail.net")
    assert got["id"] == created["id"]
    assert got["properties"] == {"company": {"value": "Acme", "type": "string"}}
    resend.Contacts.update({"email": "ada@mail.net", "properties": {"company": "Initech"}})
    shown = resend.Contacts.get(id=created["id"])["properties"]["company"]
    assert shown == {"value": "Initech", "type": "string"}
    assert [c["email"] for c in resend.Contacts.list(params={"limit": 10})["data"]] == [
        "ada@mail.net"
    ]

    with pytest.raises(resend.exceptions.ResendError) as unknown:
        resend.Contacts.update({"email": "ada@mail.net", "properties": {"size": 3}})
    assert unknown.value.code == 422

    subscriptions = resend.Contacts.Topics.list(contact_id=created["id"])
    assert [(t["id"], t["subscription"]) for t in subscriptions["data"]] == [
        (topic["id"], "opt_in")
    ]
    resend.Contacts.Topics.update(
        {"id": created["id"], "topics": [{"id": topic["id"], "subscription": "opt_out"}]}
    )
    by_email = resend.Contacts.Topics.list(email="ada@mail.net")
    assert by_email["data"][0]["subscription"] == "opt_out"

    assert resend.Contacts.remove(email="ada@mail.net")["deleted"] is True
    assert resend.Topics.remove(topic["id"])["deleted"] is True
    assert resend.ContactProperties.remove(prop["id"])["deleted"] is True
    assert resend.ContactProperties.list()["data"] == []


def test_batch_over_http_and_a_clean_stop(sdk: Server) -> None:
    headers = {"Authorization": f"Bearer {resend.api_key}", "User-Agent": "acceptance"}
    contacts = [{"email": f"p{n}@mail.net"} for n in range(1000)]
    response = httpx.post(
        f"{sdk.base_url}/contacts/batch", json=contacts, headers=headers, timeout=60
    )
    assert response.status_code == 200, response.text
    assert len(response.json()["data"]) == 1000
    page = resend.Contacts.list(params={"limit": 100})
    assert len(page["data"]) == 100 and page["has_more"] is True
    assert sdk.stop() == 0
