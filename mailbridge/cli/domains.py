"""``mailbridge domains``: the operator's side of sending domains (DESIGN §7)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.cli.operator import TeamOption, with_session
from mailbridge.cli.output import emit
from mailbridge.errors import ValidationError
from mailbridge.services import accounts, domains
from mailbridge.services.kernel import ServiceContext

domains_app = typer.Typer(help="Sending domains (operator side).", no_args_is_help=True)


@domains_app.command("add")
def domains_add(
    name: Annotated[str, typer.Argument(help="the domain, e.g. mail.example.org")],
    team: TeamOption = None,
    verified: Annotated[
        bool,
        typer.Option(
            "--verified",
            help="trust that the DNS records are published (DNS checked elsewhere): "
            "the domain may send at once and the runner does not re-check it",
        ),
    ] = False,
    receiving: Annotated[
        bool,
        typer.Option("--receiving", help="receive mail for the domain (/emails/receiving)"),
    ] = False,
) -> None:
    """Add a sending domain and print it with the DNS records to publish.

    With --verified an existing domain of the team is marked verified too.
    """

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        existing = await domains.find_domain(session, owner.id, domains.normalize_name(name))
        if existing is not None and not verified:
            raise ValidationError(f"{existing.name} exists already in team {owner.name}.")
        if existing is not None:
            existing.receiving = existing.receiving or receiving
            domain = await domains.mark_verified(session, context.clock, context.settings, existing)
        else:
            domain = await domains.create_domain(
                session, context.clock, context.settings, owner.id, name,
                domains.DomainOptions(receiving=receiving), verified=verified,
            )  # fmt: skip
        return {**domains.domain_view(domain, context.settings), "team_id": owner.id}

    emit(with_session(action))
