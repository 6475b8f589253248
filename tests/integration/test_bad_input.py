"""Bad input never hurts anyone (issue 2 of 7): one team's poisoned payload fails only
its own request, what cannot be delivered is refused at acceptance, and every limit
answers in the envelope."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from sqlalchemy import func, select

from mailbridge.config import Settings
from mailbridge.services.email import _acceptance
from mailbridge.storage.tables import Email
from tests.integration.sending import Sending, add_domain, email
from tests.integration.test_auth import assert_error

LONE = "\ud83d"


@pytest.fixture
def send_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"send_rate_limit": "1000000/minute"})


async def emails_of(sending: Sending, team_id: str) -> int:
    async with sending.context.database.session() as session:
        query = select(func.count()).select_from(Email).where(Email.team_id == team_id)
        return int(await session.scalar(query) or 0)


def raw(body: dict[str, Any]) -> bytes:
    """JSON as a client may send it: a lone surrogate as its ``\\ud83d`` escape."""
    return json.dumps(body).encode()


async def test_a_poisoned_team_fails_only_its_own_requests(sending: Sending) -> None:
    other = await sending.tenants.create(plan="pro")
    await add_domain(sending.context, other.team_id, "other.io")
    poisoned = raw(email(html=f"<p>{LONE}</p>"))

    async def poison() -> int:
        response = await sending.client.post(
            "/emails", content=poisoned,
            headers={**sending.tenant.headers, "Content-Type": "application/json"},
        )  # fmt: skip
        return response.status_code

    async def valid(number: int) -> int:
        body = email(**{"from": "Other <news@other.io>", "to": [f"b{number}@corp.io"]})
        response = await sending.client.post("/emails", json=body, headers=other.headers)
        return response.status_code

    results = await asyncio.gather(
        *(poison() for _ in range(20)), *(valid(number) for number in range(200))
    )
    assert all(400 <= status < 500 for status in results[:20]), results[:20]
    assert results[20:] == [200] * 200
    assert await emails_of(sending, other.team_id) == 200
    assert await emails_of(sending, sending.tenant.team_id) == 0


async def test_a_group_that_fails_is_stored_one_by_one(
    sending: Sending, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever still breaks a shared write after the checks breaks only its own job."""
    real_rows = _acceptance._rows

    def rows(prepared: Any, now: Any, into: Any) -> None:
        if prepared.row["subject"] == "culprit":
            raise RuntimeError("a row that cannot be written")
        real_rows(prepared, now, into)

    monkeypatch.setattr(_acceptance, "_rows", rows)
    results = await asyncio.gather(
        *(sending.send(email(to=[f"a{n}@corp.io"])) for n in range(10)),
        sending.send(email(subject="culprit")),
        *(sending.send(email(to=[f"b{n}@corp.io"])) for n in range(10)),
    )
    statuses = [response.status_code for response in results]
    assert statuses[:10] == [200] * 10 and statuses[11:] == [200] * 10, statuses
    assert_error(results[10], 500, "application_error")
    assert await sending.count() == 20


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"subject": "Hello\r\nBcc: all@corp.io"}, "subject"),
        ({"subject": "Hello\nthere"}, "subject"),
        ({"subject": f"Hi {LONE}"}, "subject"),
        ({"subject": "Hi\x00"}, "subject"),
        ({"html": f"<p>{LONE}</p>"}, "html"),
        ({"text": "NUL\x00 here"}, "text"),
        ({"text": "bell\x07"}, "text"),
        ({"from": "Shop\r\n <news@shop.io>"}, "from"),
        ({"to": ["ann\x00@corp.io"]}, "to"),
        ({"cc": [f"{LONE} <ann@corp.io>"]}, "cc"),
        ({"reply_to": ["x@corp.io\nBcc: y@corp.io"]}, "reply_to"),
        ({"headers": {"X-Note": "a\x00b"}}, "headers"),
        ({"headers": {"X-Note": f"a{LONE}"}}, "headers"),
        ({"headers": {"X-Note": "a\r\nBcc: y@corp.io"}}, "headers"),
        ({"attachments": [{"filename": "a\r\nb.txt", "content": "aGk="}]}, "filename"),
        (
            {
                "attachments": [
                    {
                        "filename": "a.txt",
                        "content": "aGk=",
                        "content_type": "text/plain\r\nX-Evil: 1",
                    }
                ]
            },
            "content_type",
        ),
        ({"tags": [{"name": "kind\x00", "value": "x"}]}, "tags"),
    ],
)
async def test_text_that_cannot_be_delivered_is_refused_naming_the_field(
    sending: Sending, fields: dict[str, Any], named: str
) -> None:
    response = await sending.client.post(
        "/emails", content=raw(email(**fields)),
        headers={**sending.tenant.headers, "Content-Type": "application/json"},
    )  # fmt: skip
    assert_error(response, 422, "validation_error")
    assert named in response.json()["message"]
    assert await sending.count() == 0


async def test_tabs_line_breaks_in_bodies_and_non_ascii_are_accepted(sending: Sending) -> None:
    body = email(subject="Grüße\tfrom 🙂", html="<p>a</p>\r\n<p>b\tc</p>", text="a\nb\r\nc")
    assert (await sending.send(body)).status_code == 200


async def test_template_variables_are_checked_and_so_is_what_they_render(
    sending: Sending,
) -> None:
    headers = sending.tenant.headers
    created = await sending.client.post("/templates", headers=headers, json={
        "name": "t", "subject": "Hi {{{NAME}}}", "html": "<p>{{{NAME}}}</p>",
        "variables": [{"key": "NAME", "type": "string", "fallback_value": "you"}],
    })  # fmt: skip
    assert created.status_code == 201, created.text
    template_id = created.json()["id"]
    published = await sending.client.post(f"/templates/{template_id}/publish", headers=headers)
    assert published.status_code == 200, published.text
    for value in ("a\x00b", f"x{LONE}"):
        body = {"from": "Shop <news@shop.io>", "to": ["ann@corp.io"],
                "template": {"id": template_id, "variables": {"NAME": value}}}  # fmt: skip
        response = await sending.client.post(
            "/emails", content=raw(body),
            headers={**sending.tenant.headers, "Content-Type": "application/json"},
        )  # fmt: skip
        assert_error(response, 422, "validation_error")
    # a line break is fine in the html it reaches, not in the subject
    variables = {"NAME": "Ann\r\nBcc: x@corp.io"}
    body = {"from": "Shop <news@shop.io>", "to": ["ann@corp.io"],
            "template": {"id": template_id, "variables": variables}}  # fmt: skip
    response = await sending.send(body)
    assert_error(response, 422, "validation_error")
    assert "subject" in response.json()["message"]
    assert await sending.count() == 0
