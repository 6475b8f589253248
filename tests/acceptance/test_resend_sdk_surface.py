"""Every public method of Resend's Python SDK is called by an acceptance test against a
real ``serve`` — found by introspection, so a method a new SDK version adds fails this
run until a test calls it — except the short list of what mailbridge leaves out on
purpose, each with its reason (and a test that it answers as the README says).

A method counts as called when a test under tests/acceptance calls it by one of its
names (``resend.Contacts.Imports.get(`` for ``ContactImports.get``). An ``_async``
method is held to its sync twin: the ``sdk`` fixture replays every sync call through
its twin and compares the requests (``sdk_surface.Twins``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import resend
import resend.exceptions

from tests.acceptance.conftest import Server
from tests.acceptance.sdk_surface import Method, sdk_methods

HERE = Path(__file__).resolve().parent
# Deliberate differences, each a rule of mailbridge's spec (the README's "Coming from
# Resend" lists them too); the methods are called all the same, and their tests assert
# the difference:
DIFFERENCES = {
    "ApiKeys.create, ApiKeys.update, ApiKeys.remove": "403 dashboard_only: keys are made, "
    "renamed and revoked in the dashboard or by `mailbridge admin keys` (spec §5.4)",
    "Webhooks.get, Webhooks.list": "no signing_secret: it is shown once, in the answer "
    "that made it (create, rotate_signing_secret) (spec §4.10)",
}
# Left out on purpose: the SDK's classes (by name prefix) mailbridge does not serve yet.
LEFT_OUT = {
    "OAuthGrants": "OAuth grants: mailbridge has API keys and member sessions, no OAuth "
    "applications to grant",
}


def left_out(method: Method) -> bool:
    return any(name.startswith(tuple(LEFT_OUT)) for name in method.names)


def called(method: Method, sources: str) -> bool:
    return any(re.search(rf"resend\.{re.escape(name)}\(", sources) for name in method.names)


def test_every_method_of_the_sdk_is_called_by_an_acceptance_test() -> None:
    sources = "\n".join(path.read_text() for path in sorted(HERE.glob("test_*.py")))
    methods = [method for method in sdk_methods() if not method.name.endswith("_async")]
    assert len(methods) >= 140, "the SDK's surface was found"
    missing = [
        method.names[0]
        for method in methods
        if not left_out(method) and not called(method, sources)
    ]
    assert missing == [], f"SDK methods no acceptance test calls: {missing}"
    out = sorted(method.names[0] for method in methods if left_out(method))
    print(f"\n{len(methods)} SDK methods, {len(methods) - len(out)} called, left out: {out}")


def test_every_async_method_has_a_sync_twin_the_fixture_holds_it_to() -> None:
    names = {name for method in sdk_methods() for name in method.names}
    orphans = sorted(
        name
        for name in names
        if name.endswith("_async") and name.removesuffix("_async") not in names
    )
    assert orphans == []


def test_what_is_left_out_answers_404(sdk: Server) -> None:
    with pytest.raises(resend.exceptions.ResendError) as refused:
        resend.OAuthGrants.list()
    assert refused.value.code == 404
