"""A bounce received by the listener reaches a real webhook receiver on loopback as
``email.bounced``, and the message itself as ``email.received``."""

from __future__ import annotations

import aiosmtplib

from mailbridge.services import inbound
from mailbridge.services.domains import DomainOptions, create_domain
from mailbridge.services.kernel import ServiceContext
from tests.integration.email_factory import add_email
from tests.integration.test_inbound import dsn
from tests.integration.webhook_setup import Hooks


async def test_a_bounce_fires_email_bounced_and_email_received(hooks: Hooks) -> None:
    settings = hooks.context.settings.model_copy(update={"inbound_authentication": False})
    context = ServiceContext(settings, hooks.context.database, hooks.clock)
    async with context.database.session() as session:
        domain = await create_domain(
            session, context.clock, settings, hooks.tenant.team_id, "shop.io",
            DomainOptions(receiving=True), verified=True,
        )  # fmt: skip
        await session.commit()
    created = await hooks.create(["email.bounced", "email.received"])
    sent = await add_email(context, domain, to=["gone@corp.io"])
    server, _handler = await inbound.start_listener(context, "127.0.0.1", 0)
    try:
        await aiosmtplib.send(
            dsn(sent.id, "gone@corp.io"), hostname="127.0.0.1",
            port=server.sockets[0].getsockname()[1], sender="mailer-daemon@mx.corp.io",
            recipients=[f"bounces+{sent.id}@send.shop.io"],
        )  # fmt: skip
    finally:
        server.close()
    assert await hooks.run() == 2
    payloads = {request.payload["type"]: request.payload for request in hooks.receiver.requests()}
    assert set(payloads) == {"email.bounced", "email.received"}
    bounced = payloads["email.bounced"]["data"]
    assert bounced["email_id"] == sent.id
    assert bounced["bounce"] == {"type": "hard", "status": "5.1.1",
                                 "diagnostic": "550 5.1.1 No such user"}  # fmt: skip
    assert payloads["email.received"]["data"]["kind"] == "bounce"
    assert all(
        request.signed_with(created["signing_secret"]) for request in hooks.receiver.requests()
    )
