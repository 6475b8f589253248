"""Reserved documentation and testing names (RFC 2606, RFC 6761): never mailed, and said so
by name when they leave a send with nobody (spec §4.1 rule 2: a 422 validation_error); a
test setup sends to them with MAILBRIDGE_ALLOW_RESERVED_RECIPIENTS=true."""

from __future__ import annotations

import pytest

from mailbridge.config import Settings
from tests.integration.sending import Sending, email
from tests.integration.test_auth import assert_error


@pytest.fixture(params=[False, True], ids=["default", "allowed"])
def send_settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    return settings.model_copy(update={"allow_reserved_recipients": request.param})


async def test_a_reserved_recipient_is_named_for_what_it_is(sending: Sending) -> None:
    answer = await sending.send(email(to=["x@example.com"]))
    if sending.context.settings.allow_reserved_recipients:
        assert answer.status_code == 200, answer.text
        [row] = await sending.emails()
        assert row.delivery_recipients == ["x@example.com"]
        return
    assert_error(answer, 422, "validation_error")
    message = answer.json()["message"]
    assert "x@example.com" in message and "RFC 2606" in message and "RFC 6761" in message
    assert "suppressed" not in message
    assert await sending.count() == 0


async def test_reserved_and_listed_together_say_both(sending: Sending) -> None:
    answer = await sending.send(email(to=["y@shop.test", "suppressed@simulator.mailbridge.dev"]))
    if sending.context.settings.allow_reserved_recipients:
        assert answer.status_code == 200, answer.text
        return
    assert_error(answer, 422, "validation_error")
    message = answer.json()["message"]
    assert "y@shop.test" in message and "other `to` recipients are suppressed" in message
