"""The dashboard's templates carry no script or style of their own (DESIGN §9): its
Content-Security-Policy (``script-src 'self'; style-src 'self'``) would refuse them, and
a value put into an inline handler is code, whatever HTML escaping does to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mailbridge.dashboard._render import HERE
from mailbridge.mail.framing import mail_document

TEMPLATES = sorted((HERE / "templates").glob("*.html"))
INLINE = {
    "an event handler": re.compile(r"\son[a-z]+\s*=", re.IGNORECASE),
    "htmx's inline handlers": re.compile(r"\shx-on", re.IGNORECASE),
    "a script element without src": re.compile(r"<script(?![^>]*\ssrc=)", re.IGNORECASE),
    "a javascript: URL": re.compile(r"javascript:", re.IGNORECASE),
    "a style attribute": re.compile(r"\sstyle\s*=", re.IGNORECASE),
    "a style element": re.compile(r"<style", re.IGNORECASE),
}


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_no_template_has_inline_script_or_style(template: Path) -> None:
    source = template.read_text()
    found = {what: pattern.findall(source) for what, pattern in INLINE.items()}
    assert {what: hits for what, hits in found.items() if hits} == {}


def test_the_templates_are_all_looked_at() -> None:
    assert {"base.html", "members.html", "received.html"} <= {t.name for t in TEMPLATES}


def test_a_mail_document_starts_with_its_own_policy() -> None:
    policy = (
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:{}\">"
    )
    assert mail_document("<p>Hi</p>", False) == policy.format("") + "<p>Hi</p>"
    assert mail_document(" <!doctype html>\n<p>Hi</p>", True) == (
        " <!doctype html>" + policy.format(" https: http:") + "\n<p>Hi</p>"
    )
