"""Operator commands that act on the database directly (DESIGN §7)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Annotated, Any, TypeVar

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.cli.output import emit, run, settings_from_env
from mailbridge.clock import isoformat_ms
from mailbridge.errors import ConfigurationError
from mailbridge.services import accounts, members
from mailbridge.services.accounts import Permission, Role, api_key_view
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.migrate import upgrade

T = TypeVar("T")

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
teams_app = typer.Typer(help="Teams (tenants).", no_args_is_help=True)
keys_app = typer.Typer(help="API keys (operator side: create and revoke).", no_args_is_help=True)
members_app = typer.Typer(help="Team members and their sessions.", no_args_is_help=True)
sessions_app = typer.Typer(help="A member's dashboard sessions.", no_args_is_help=True)
members_app.add_typer(sessions_app, name="sessions")

TeamOption = Annotated[
    str | None, typer.Option("--team", help="team name or id; may be omitted with one team")
]


def with_session(action: Callable[[ServiceContext, AsyncSession], Awaitable[T]]) -> T:
    """Migrate, open a session, run ``action``, close everything."""
    settings = settings_from_env()
    upgrade(settings.resolved_database_url, settings.database_schema)

    async def main() -> T:
        context = ServiceContext.from_settings(settings)
        try:
            async with context.database.session() as session:
                return await action(context, session)
        finally:
            await context.database.dispose()

    return run(main)


@db_app.command("upgrade")
def db_upgrade(revision: str = "head") -> None:
    """Apply the migrations up to REVISION (default: the newest)."""
    settings = settings_from_env()
    upgrade(settings.resolved_database_url, settings.database_schema, revision)
    emit({"database": settings.resolved_database_url.split("@")[-1], "revision": revision})


TIMEZONE_HELP = "IANA name where campaigns' daily batches roll over, e.g. Europe/Berlin"
TimezoneOption = Annotated[str, typer.Option("--timezone", help=TIMEZONE_HELP)]


def team_view(team: Any) -> dict[str, Any]:
    return {
        "object": "team",
        "id": team.id,
        "name": team.name,
        "plan": team.plan,
        "timezone": team.timezone,
        "created_at": isoformat_ms(team.created_at),
    }


@teams_app.command("create")
def teams_create(
    name: Annotated[str, typer.Option("--name", help="the team's name")],
    plan: Annotated[str, typer.Option("--plan", help="free, pro or unlimited")] = "free",
    timezone: TimezoneOption = "UTC",
) -> None:
    """Create a team."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        return team_view(await accounts.create_team(session, context.clock, name, plan, timezone))

    emit(with_session(action))


@teams_app.command("update")
def teams_update(
    timezone: Annotated[str | None, typer.Option("--timezone", help=TIMEZONE_HELP)] = None,
    plan: Annotated[
        str | None, typer.Option("--plan", help="free, pro or unlimited (its quotas)")
    ] = None,
    team: TeamOption = None,
) -> None:
    """Change a team's settings: its timezone, its plan (e.g. --plan unlimited lifts the
    daily and monthly quotas, received mail included)."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        if timezone is None and plan is None:
            raise ConfigurationError("give --timezone, --plan or both")
        owner = await accounts.resolve_team(session, team)
        return team_view(await accounts.update_team(session, owner, timezone=timezone, plan=plan))

    emit(with_session(action))


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option("--name", help="what the key is for")],
    team: TeamOption = None,
    permission: Annotated[
        Permission, typer.Option("--permission", help="full_access or sending_access")
    ] = Permission.FULL_ACCESS,
    domain: Annotated[
        str | None, typer.Option("--domain", help="limit a sending key to one domain")
    ] = None,
    expires_in_days: Annotated[
        int | None, typer.Option("--expires-in-days", min=1, help="expire the key")
    ] = None,
) -> None:
    """Create an API key and print it with its token (shown this once only)."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        expires = context.clock.now() + timedelta(days=expires_in_days) if expires_in_days else None
        key, token = await accounts.create_api_key(
            session, context.clock, owner.id, name, permission, domain, expires
        )
        return {"object": "api_key", **api_key_view(key), "team_id": owner.id, "token": token}

    emit(with_session(action))


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="the key's id")]) -> None:
    """Revoke an API key at once."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        key = await accounts.revoke_api_key(session, context.clock, None, key_id)
        return {"object": "api_key", "id": key.id, "revoked_at": isoformat_ms(key.revoked_at)}

    emit(with_session(action))


@members_app.command("add")
def members_add(
    email: Annotated[str, typer.Option("--email")],
    role: Annotated[Role, typer.Option("--role", help="owner, admin or view_only")],
    team: TeamOption = None,
    password: Annotated[
        str | None,
        typer.Option(
            "--password",
            help="the dashboard sign-in password (10 characters or more); "
            "pass --password - to type it at a hidden prompt",
        ),
    ] = None,
) -> None:
    """Add a member and print a session token for them (the API's member credential);
    with --password they also sign in to the dashboard."""
    if password == "-":
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        hashed = await members.hash_password(password) if password is not None else None
        member, token = await accounts.add_team_member(
            session, context.clock, owner, email, role, hashed
        )
        return {
            "object": "member",
            "id": member.id,
            "team_id": owner.id,
            "email": member.email,
            "role": member.role,
            "session_token": token,
        }

    emit(with_session(action))


@members_app.command("password")
def members_password(
    email: Annotated[str, typer.Option("--email")],
    team: TeamOption = None,
    password: Annotated[
        str, typer.Option("--password", help="the new password; - to type it at a hidden prompt")
    ] = "-",
) -> None:
    """Set a member's dashboard password (a forgotten one, or a member added without);
    every session the member had ends."""
    if password == "-":
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        member = await members.member_by_email(session, owner.id, email)
        ended = await members.set_password(session, context.clock, member, password)
        return {"object": "member", "id": member.id, "email": member.email, "password": "set",
                "sessions_revoked": ended}  # fmt: skip

    emit(with_session(action))


@sessions_app.command("list")
def sessions_list(email: Annotated[str, typer.Option("--email")], team: TeamOption = None) -> None:
    """A member's open sessions (where and when each was opened)."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        member = await members.member_by_email(session, owner.id, email)
        rows = await members.list_sessions(
            session, context.clock, owner.id, Role.OWNER, None, member.id
        )
        return {"object": "list", "has_more": False,
                "data": [members.session_view(row) for row in rows]}  # fmt: skip

    emit(with_session(action))


@sessions_app.command("revoke")
def sessions_revoke(
    email: Annotated[str, typer.Option("--email")], team: TeamOption = None
) -> None:
    """End every session of a member (a lost laptop, a leaked cookie): they sign in again."""

    async def action(context: ServiceContext, session: AsyncSession) -> dict[str, Any]:
        owner = await accounts.resolve_team(session, team)
        member = await members.member_by_email(session, owner.id, email)
        ended = await members.revoke_member_sessions(session, context.clock, member, None)
        await session.commit()
        return {"object": "member", "id": member.id, "email": member.email,
                "sessions_revoked": ended}  # fmt: skip

    emit(with_session(action))
