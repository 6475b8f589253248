"""A key limited to a domain: it only sends, and only on its domain."""

from __future__ import annotations

import pytest

from mailbridge.errors import RestrictedApiKey
from mailbridge.services.accounts._api_keys import Permission
from mailbridge.services.accounts._auth import Action, Principal
from mailbridge.services.accounts._teams import Role

LIMITED = Principal(
    "t", "free", api_key_id="k", permission=Permission.SENDING_ACCESS, domain="mail.acme.io"
)


@pytest.mark.parametrize("action", [Action.READ, Action.WRITE, Action.DASHBOARD_READ])
def test_a_domain_limits_a_key_to_sending_whatever_its_permission(action: Action) -> None:
    # The key service never stores a domain on a full-access key; were one read, its
    # domain would still hold, so no read would show another domain's mail.
    full_but_limited = Principal("t", "free", api_key_id="k", domain="mail.acme.io")
    full_but_limited.authorize(Action.SEND)
    with pytest.raises(RestrictedApiKey):
        full_but_limited.authorize(action)


def test_a_limited_key_is_refused_another_domain_of_its_team() -> None:
    LIMITED.authorize_domain("MAIL.acme.io")
    with pytest.raises(RestrictedApiKey) as refused:
        LIMITED.authorize_domain("news.acme.io")
    assert refused.value.status_code == 401 and "mail.acme.io" in refused.value.message


@pytest.mark.parametrize(
    "principal",
    [
        Principal("t", "free", api_key_id="k"),
        Principal("t", "free", api_key_id="k", permission=Permission.SENDING_ACCESS),
        Principal("t", "free", member_id="m", role=Role.ADMIN),
    ],
)
def test_an_unlimited_caller_reaches_every_domain(principal: Principal) -> None:
    principal.authorize_domain("news.acme.io")
    assert principal.may_send_from("news.acme.io")
