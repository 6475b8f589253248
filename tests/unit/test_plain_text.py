"""A text part for every HTML: what html2text makes of an email's HTML (links as
``text (url)``, no Markdown marks), and the alternative the renderer adds from the HTML as
written — never from the tracked HTML — unless the caller gave text or it is switched off."""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from mailbridge.mail.plain_text import html_to_text
from mailbridge.mail.rendering import RenderJob, Tracking, compose_job

HTML = (
    '<h1>Your order</h1><p>Hi <b>Ann</b>, it ships <a href="https://shop.io/o/42">tomorrow</a>.'
    '</p><p><img src="https://shop.io/logo.png" alt="Shop"></p>'
    '<p>Questions: <a href="mailto:help@shop.io">help@shop.io</a>, or '
    '<a href="https://shop.io/help">https://shop.io/help</a>.</p>'
)


def test_links_read_text_then_url_and_markdown_marks_are_left_out() -> None:
    text = html_to_text(HTML)
    assert "it ships tomorrow (https://shop.io/o/42)." in text
    assert "Questions: help@shop.io, or https://shop.io/help." in text
    assert "Hi Ann," in text and "**" not in text and "logo.png" not in text
    assert "Your order" in text and "](" not in text


def parts(job: RenderJob) -> dict[str, str]:
    message = message_from_bytes(compose_job(job), policy=policy.default)
    assert isinstance(message, EmailMessage)
    found: dict[str, str] = {}
    for part in message.walk():
        if part.get_content_maintype() == "text":
            assert isinstance(part, EmailMessage)
            found[part.get_content_type()] = str(part.get_content())
    return found


def job(**fields: Any) -> RenderJob:
    email: dict[str, Any] = {
        "id": "01900000-0000-7000-8000-000000000001", "from_address": "Shop <news@shop.io>",
        "to": ["ann@corp.io"], "cc": [], "reply_to": [], "subject": "Your order", "html": HTML,
        "text": None, "headers": {}, "marketing": False,
        "message_id": "<01900000-0000-7000-8000-000000000001@shop.io>",
    }  # fmt: skip
    options = {key: value for key, value in fields.items() if key not in email}
    email.update({key: value for key, value in fields.items() if key in email})
    return RenderJob(email, date=datetime(2026, 11, 28, tzinfo=UTC), **options)


def test_html_alone_gets_a_text_alternative_with_the_untracked_links() -> None:
    tracked = Tracking("https://mail.shop.io", b"s" * 32, open_tracking=True, click_tracking=True)
    found = parts(job(tracking=tracked))
    assert set(found) == {"text/plain", "text/html"}
    assert "tomorrow (https://shop.io/o/42)" in found["text/plain"]
    assert "/t/c/" not in found["text/plain"]  # the real address, not the tracked one
    assert "/t/c/" in found["text/html"]


def test_text_given_by_the_caller_wins_and_the_setting_turns_it_off() -> None:
    assert parts(job(text="My own words."))["text/plain"].strip() == "My own words."
    assert set(parts(job(text_from_html=False))) == {"text/html"}
