"""The principal's authorization matrix and the token format, without I/O."""

from __future__ import annotations

import pytest

from mailbridge.errors import (
    ApiError,
    DashboardOnly,
    MissingApiKey,
    RestrictedApiKey,
    ViewOnlyMember,
)
from mailbridge.services.accounts import _tokens as tokens
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._auth import Action, Principal, bearer_token
from mailbridge.services.accounts._teams import Role

FULL_KEY = Principal("t", "free", api_key_id="k")
SENDING_KEY = Principal("t", "free", api_key_id="k", permission=Permission.SENDING_ACCESS)
OWNER = Principal("t", "free", member_id="m", role=Role.OWNER)
ADMIN = Principal("t", "free", member_id="m", role=Role.ADMIN)
VIEWER = Principal("t", "free", member_id="m", role=Role.VIEW_ONLY)

ALLOWED = None
MATRIX: list[tuple[Principal, Action, type[ApiError] | None]] = [
    (FULL_KEY, Action.READ, ALLOWED),
    (FULL_KEY, Action.WRITE, ALLOWED),
    (FULL_KEY, Action.SEND, ALLOWED),
    (FULL_KEY, Action.DASHBOARD, DashboardOnly),
    (SENDING_KEY, Action.SEND, ALLOWED),
    (SENDING_KEY, Action.READ, RestrictedApiKey),
    (SENDING_KEY, Action.WRITE, RestrictedApiKey),
    (SENDING_KEY, Action.DASHBOARD, RestrictedApiKey),
    (OWNER, Action.DASHBOARD, ALLOWED),
    (ADMIN, Action.WRITE, ALLOWED),
    (ADMIN, Action.SEND, ALLOWED),
    (VIEWER, Action.READ, ALLOWED),
    (VIEWER, Action.WRITE, ViewOnlyMember),
    (VIEWER, Action.SEND, ViewOnlyMember),
    (VIEWER, Action.DASHBOARD, ViewOnlyMember),
]


@pytest.mark.parametrize(("principal", "action", "refusal"), MATRIX)
def test_authorization_matrix(
    principal: Principal, action: Action, refusal: type[ApiError] | None
) -> None:
    if refusal is None:
        principal.authorize(action)
    else:
        with pytest.raises(refusal):
            principal.authorize(action)


def test_a_domain_limited_key_sends_only_from_its_domain() -> None:
    limited = Principal(
        "t", "free", api_key_id="k", permission=Permission.SENDING_ACCESS, domain="mail.acme.io"
    )
    assert limited.may_send_from("MAIL.acme.io")
    assert not limited.may_send_from("acme.io")
    assert FULL_KEY.may_send_from("anything.io")


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer  ", "Token abc", "Basic x"])
def test_bearer_token_requires_a_bearer(header: str | None) -> None:
    with pytest.raises(MissingApiKey):
        bearer_token(header)


def test_bearer_token_reads_the_token() -> None:
    assert bearer_token("bearer mb_x") == "mb_x"


def test_tokens_round_trip_and_refuse_tampering() -> None:
    issued = tokens.issue("mb")
    assert issued.token.startswith("mb_")
    assert tokens.split(issued.token, "mb") == issued.prefix
    assert tokens.matches(issued.token, issued.digest)
    assert not tokens.matches(issued.token + "x", issued.digest)
    assert issued.digest != issued.token and len(issued.digest) == 64
    assert tokens.split(issued.token, "mbs") is None
    assert tokens.split("mb_short_secret", "mb") is None
    assert tokens.issue("mb").token != issued.token
