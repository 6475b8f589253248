"""``mailbridge.redaction``: every secret the service hands out is masked by name and by
shape, in request-log bodies (whatever their spelling, shortcut or not), query strings,
paths, and uvicorn's access line."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailbridge.cli.log_lines import formatter
from mailbridge.mail import signed_links, tracking
from mailbridge.redaction import REDACTED, mask_text, redact_query
from mailbridge.services.accounts._request_logs import (
    MAX_STORED_BODY,
    CapturedBody,
    LogEntry,
    _redact,
    redact_body,
)
from mailbridge.services.polls import Voter
from mailbridge.services.polls._links import vote_url
from mailbridge.services.webhooks._subscriptions import new_secret

SECRET = b"instance secret"
BASE = "https://mail.acme.io"
ID = "0191a3c2-7f00-7000-8000-000000000001"
LATER = datetime(2030, 1, 1, tzinfo=UTC)
INVITATION = "s7f7qa8Vs6ANDu7nSQFRLpDpt8JTPcEqXEoEqNP5S2o"
LINKS = {
    "invitation": f"{BASE}/dashboard/invitations/{INVITATION}",
    "open": tracking.open_pixel_url(BASE, SECRET, ID),
    "click": tracking.click_url(BASE, SECRET, ID, "https://shop.io/sale?x=1"),
    "unsubscribe": tracking.unsubscribe_url(BASE, SECRET, ID),
    "download": signed_links.download_url(BASE, SECRET, ID, LATER),
    "received": signed_links.received_url(BASE, SECRET, signed_links.RECEIVED_RAW, ID, LATER),
    "received attachment": signed_links.received_url(
        BASE, SECRET, signed_links.RECEIVED_ATTACHMENT, ID, LATER
    ),
    "vote": vote_url(BASE, SECRET, ID, ID, 1, Voter.of(None, "ann@corp.io")),
}
TOKENS = {
    "API key": "mb_AbCdEfGhIj_0123456789abcdefghijABCDEFGHIJKL",
    "session": "mbs_KlMnOpQrSt_0123456789abcdefghijABCDEFGHIJKL",
    "webhook secret": "whsec_q1-W_e2r3t4y5u6i7o8p9a0s1d2f3g4h5j6k7l8z9x0c",
}
# What a link's holder may do with it: the token, its last segment.
SECRETS = {**{what: url.rsplit("/", 1)[1] for what, url in LINKS.items()}, **TOKENS}


@pytest.mark.parametrize("what", list(LINKS))
def test_each_signed_or_invitation_link_keeps_its_kind_and_loses_its_token(what: str) -> None:
    url = LINKS[what]
    masked = mask_text(f'<a href="{url}">here</a>')
    assert SECRETS[what] not in masked
    assert masked == f'<a href="{url.rsplit("/", 1)[0]}/{REDACTED}">here</a>'


@pytest.mark.parametrize("what", list(TOKENS))
def test_keys_sessions_and_webhook_secrets_are_masked_anywhere(what: str) -> None:
    token = TOKENS[what]
    kind = token.split("_", 1)[0]
    assert mask_text(f"use {token}, then /x/{token}") == (
        f"use {kind}_{REDACTED}, then /x/{kind}_{REDACTED}"
    )


def test_a_standard_base64_signing_secret_is_masked_whole_plain_or_percent_encoded() -> None:
    secret = "whsec_mr+oV7fd/Q2x9kLp+Zq1w8Rt/Yb3n0cA"  # as new_secret() makes them
    encoded = secret.replace("+", "%2B").replace("/", "%2F") + "%3D"
    assert mask_text(f"got {secret}= back") == f"got whsec_{REDACTED} back"
    assert mask_text(f"/hook?x={encoded}&limit=5") == f"/hook?x=whsec_{REDACTED}&limit=5"
    for _ in range(200):
        made = new_secret()
        assert mask_text(f'"{made}"') == f'"whsec_{REDACTED}"', made


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (f"token={INVITATION}&limit=5", f"token={REDACTED}&limit=5"),
        (f"limit=5&api_key={TOKENS['API key']}", f"limit=5&api_key={REDACTED}"),
        ("sig=abc&expires=1700000000", f"sig={REDACTED}&expires=1700000000"),
        ("X-Amz-Credential=AKIA%2F1&X-Amz-Signature=f00d", f"X-Amz-Credential={REDACTED}"
         f"&X-Amz-Signature={REDACTED}"),
        # A secret's shape in any parameter, encoded or not.
        (f"next=%2Fdashboard%2Finvitations%2F{INVITATION}", f"next={REDACTED}"),
        (f"q={TOKENS['session']}", f"q={REDACTED}"),
        ("status=sent&after=2026-01-01", None),
        ("", None),
    ],
)  # fmt: skip
def test_query_strings(query: str, expected: str | None) -> None:
    assert redact_query(query) == (query if expected is None else expected)


def test_a_log_entry_stores_its_path_and_query_masked() -> None:
    entry = LogEntry(
        team_id="t", api_key_id=None, member_id=None, method="GET",
        path=f"/api-keys/{TOKENS['API key']}", query=f"token={INVITATION}", status=404,
        user_agent="ua", duration_ms=1, request_body=CapturedBody(b""),
        response_body=CapturedBody(json.dumps({"url": LINKS["invitation"]}).encode()),
        created_at=LATER,
    )  # fmt: skip
    row = entry.row()
    assert row["path"] == f"/api-keys/mb_{REDACTED}"
    assert row["query"] == f"token={REDACTED}"
    assert json.loads(row["response_body"]) == {"url": f"{BASE}/dashboard/invitations/{REDACTED}"}


def test_route_answers_keep_everything_but_their_secrets() -> None:
    answers: list[dict[str, Any]] = [
        {"object": "invitation", "id": ID, "email": "a@b.io", "url": LINKS["invitation"]},
        {"id": ID, "token": TOKENS["API key"]},
        {"object": "webhook", "id": "7", "signing_secret": TOKENS["webhook secret"]},
        {"raw_url": LINKS["received"], "raw_url_expires_at": "2030-01-01T00:00:00.000Z",
         "attachments": [{"download_url": LINKS["received attachment"], "size": 3}]},
    ]  # fmt: skip
    stored = [json.loads(redact_body(json.dumps(answer).encode()) or "") for answer in answers]
    assert stored == [
        {"object": "invitation", "id": ID, "email": "a@b.io",
         "url": f"{BASE}/dashboard/invitations/{REDACTED}"},
        {"id": ID, "token": REDACTED},
        {"object": "webhook", "id": "7", "signing_secret": REDACTED},
        {"raw_url": REDACTED, "raw_url_expires_at": "2030-01-01T00:00:00.000Z",
         "attachments": [{"download_url": REDACTED, "size": 3}]},
    ]  # fmt: skip


SECRET_VALUES = st.sampled_from(list(LINKS.values()) + list(TOKENS.values())).flatmap(
    lambda secret: st.sampled_from([secret, f"see {secret}.", f"<a href='{secret}'>x</a>"])
)
KEYS = st.sampled_from(["to", "html", "url", "link", "data", "token", "content", "q"])
BODIES = st.recursive(
    st.none() | st.integers() | st.text(max_size=20) | SECRET_VALUES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=12,
)


@given(BODIES, st.booleans(), st.booleans())
def test_no_secret_is_stored_whatever_the_bodys_spelling(
    body: Any, ascii_only: bool, escaped_slashes: bool
) -> None:
    raw = json.dumps(body, ensure_ascii=ascii_only).encode()
    if escaped_slashes:  # "\/", as PHP's json_encode writes it
        raw = raw.replace(b"/", b"\\/")
    stored = redact_body(raw)
    assert stored is not None
    assert not [what for what, secret in SECRETS.items() if secret in stored]
    walked = json.dumps(_redact(json.loads(raw)), separators=(",", ":"), ensure_ascii=False)
    if len(walked) <= MAX_STORED_BODY:  # the shortcut stores what the full walk stores
        assert json.loads(stored) == json.loads(walked)


@pytest.mark.parametrize("log_format", ["json", "text"])
@pytest.mark.parametrize("what", list(LINKS))
def test_the_access_line_masks_tokens_in_paths(log_format: str, what: str) -> None:
    path = LINKS[what].removeprefix(BASE)
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", path, "1.1", 200), None,
    )  # fmt: skip
    line = formatter(log_format).format(record)
    assert SECRETS[what] not in line
    masked = f"{path.rsplit('/', 1)[0]}/{REDACTED}"
    assert f"GET {masked} 200" in line
    if log_format == "json":
        assert json.loads(line)["path"] == masked


def test_an_access_line_of_another_shape_is_masked_whole() -> None:
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, "%s", (LINKS["invitation"],), None
    )
    line = json.loads(formatter("json").format(record))
    assert line["message"] == f"{BASE}/dashboard/invitations/{REDACTED}"
