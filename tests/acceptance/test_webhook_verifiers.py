"""One delivery, three verifiers: a webhook that `mailbridge serve` delivers to a plain
HTTP server verifies with Resend's Node SDK (`webhooks.verify`, under `node --test`),
with the `standardwebhooks` Python package and with spec §6.2's HMAC — and, after a
rotation, with the old secret and the new one alike."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import resend
from standardwebhooks import Webhook, WebhookVerificationError

from tests.acceptance.conftest import Server
from tests.webhook_receiver import Received, webhook_receiver

NODE_TESTS = Path(__file__).resolve().parents[1] / "node"


@pytest.fixture
def environment(environment: dict[str, str]) -> dict[str, str]:
    return {**environment, "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true"}


def node_verifies(request: Received, valid: list[str], invalid: str, folder: Path) -> None:
    """Resend's Node SDK verifies ``request`` with each of ``valid`` and refuses ``invalid``."""
    node = shutil.which("node")
    assert node is not None, "node is on the machine (the brief's stack)"
    assert (NODE_TESTS / "node_modules" / "resend").is_dir(), "make test runs npm ci first"
    delivery = folder / f"delivery-{request.event_id}.json"
    delivery.write_text(json.dumps({
        "body": request.body.decode(), "headers": request.headers,
        "type": request.payload["type"], "valid": valid, "invalid": invalid,
    }))  # fmt: skip
    result = subprocess.run(
        [node, "--test", str(NODE_TESTS / "verify_webhook.test.mjs")],
        env={**os.environ, "MAILBRIDGE_DELIVERY": str(delivery)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# pass 3" in result.stdout and "# fail 0" in result.stdout, result.stdout


def python_verifies(request: Received, valid: list[str], invalid: str) -> None:
    """The `standardwebhooks` package and spec §6.2's HMAC (the receiver's own)."""
    for secret in valid:
        assert Webhook(secret).verify(request.body, request.headers) == request.payload
    with pytest.raises(WebhookVerificationError):
        Webhook(invalid).verify(request.body, request.headers)
    assert request.signed_with(valid[0])  # X-Service-Signature: the current secret
    assert not request.signed_with(invalid)


def test_a_delivery_verifies_with_the_node_sdk_standardwebhooks_and_the_spec_hmac(
    sdk: Server, tmp_path: Path
) -> None:
    with webhook_receiver() as receiver:
        created = resend.Webhooks.create(
            {"endpoint": receiver.url(), "events": ["contact.created"]}
        )
        secret = created["signing_secret"]
        stranger = resend.Webhooks.create(
            {"endpoint": receiver.url("/other"), "events": ["contact.deleted"]}
        )["signing_secret"]

        resend.Contacts.create({"email": "ann@shop.io"})
        [first] = receiver.wait_for(1)
        python_verifies(first, [secret], stranger)
        node_verifies(first, [secret], stranger, tmp_path)

        rotated = resend.Webhooks.rotate_signing_secret(created["id"])
        new = rotated["signing_secret"]
        assert rotated["id"] == created["id"] and new != secret
        resend.Contacts.create({"email": "bob@shop.io"})
        _, second = receiver.wait_for(2)
        python_verifies(second, [new, secret], stranger)
        node_verifies(second, [new, secret], stranger, tmp_path)
        assert second.headers["x-service-signature-previous"]  # spec receivers on the old one
    assert sdk.stop() == 0
