"""``mailbridge webhooks``: a team's webhooks from the operator's side (list, get, create,
rotate-secret, delete), through the same services as the API."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.cli.operator import TeamOption, with_session
from mailbridge.cli.output import emit
from mailbridge.services import accounts, webhooks
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.pagination import PageRequest

webhooks_app = typer.Typer(help="Webhooks (operator side).", no_args_is_help=True)

WebhookId = Annotated[str, typer.Argument(help="the webhook's id (a number)")]


@webhooks_app.command("list")
def webhooks_list(
    team: TeamOption = None,
    limit: Annotated[str | None, typer.Option(help="1 to 100 (default 20)")] = None,
    after: Annotated[str | None, typer.Option(help="the id after which to list")] = None,
) -> None:
    """The team's webhooks, newest first (the list object of GET /webhooks)."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        page = await webhooks.list_webhooks(session, owner.id, PageRequest.parse(limit, after))
        return {
            "object": "list",
            "has_more": page.has_more,
            "data": [webhooks.webhook_view(hook) for hook in page.items],
        }

    emit(with_session(action))


@webhooks_app.command("get")
def webhooks_get(webhook_id: WebhookId, team: TeamOption = None) -> None:
    """One webhook (without its secret)."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        return webhooks.webhook_view(await webhooks.get_webhook(session, owner.id, webhook_id))

    emit(with_session(action))


@webhooks_app.command("create")
def webhooks_create(
    endpoint: Annotated[str, typer.Argument(help="the http(s) URL to POST events to")],
    event: Annotated[
        list[str], typer.Option("--event", help="an event name to subscribe to (repeatable)")
    ],
    team: TeamOption = None,
) -> None:
    """Register a webhook; prints it with its signing secret, shown only now."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        hook = await webhooks.create_webhook(
            session, context.clock, context.settings, owner.id, endpoint, event
        )
        return webhooks.created_webhook_view(hook)

    emit(with_session(action))


@webhooks_app.command("rotate-secret")
def webhooks_rotate_secret(webhook_id: WebhookId, team: TeamOption = None) -> None:
    """A new signing secret, shown only now; the old one signs too for 24 hours."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        hook = await webhooks.rotate_secret(session, context.clock, owner.id, webhook_id)
        return webhooks.created_webhook_view(hook)

    emit(with_session(action))


@webhooks_app.command("delete")
def webhooks_delete(webhook_id: WebhookId, team: TeamOption = None) -> None:
    """Remove a webhook and its queued deliveries."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        hook = await webhooks.delete_webhook(session, owner.id, webhook_id)
        return {"object": "webhook", "id": str(hook.id), "deleted": True}

    emit(with_session(action))
