"""The ``mailbridge`` command line.

The server's parts (the app, the runner, the listener, uvicorn) are imported by the
commands that run them: an operator command (``admin keys create``) then starts much
faster.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import secrets
import signal
import socket
import sys
from types import FrameType
from typing import Annotated

import typer

from mailbridge.cli import client, operator
from mailbridge.cli.domains import domains_app
from mailbridge.cli.log_lines import configure as configure_log_lines
from mailbridge.cli.output import run, settings_from_env
from mailbridge.cli.webhooks import webhooks_app
from mailbridge.config import Settings
from mailbridge.services import accounts, members
from mailbridge.services.kernel import ServiceContext
from mailbridge.storage.migrate import upgrade

app = typer.Typer(
    name="mailbridge",
    help="Self-hostable email platform with an automation engine.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(operator.db_app, name="db")
admin_app = typer.Typer(
    help="Operator commands: they open the database directly (no API key).",
    no_args_is_help=True,
)
admin_app.add_typer(operator.teams_app, name="teams")
admin_app.add_typer(operator.keys_app, name="keys")
admin_app.add_typer(operator.members_app, name="members")
admin_app.add_typer(domains_app, name="domains")
admin_app.add_typer(webhooks_app, name="webhooks")
app.add_typer(admin_app, name="admin")
client.register(app)

HostOption = Annotated[str | None, typer.Option("--host", help="bind address")]
PortOption = Annotated[int | None, typer.Option("--port", help="TCP port")]


def _configure_logging(settings: Settings) -> None:
    configure_log_lines(settings)  # text or JSON lines, secrets masked (MAILBRIDGE_LOG_FORMAT)


def settle_heap() -> None:
    """Keep the cyclic garbage collector off the request path of a long-running process
    (``serve``, ``api`` and ``runner`` call it once started; so does the delivery bench,
    which runs the runner's delivery worker in its own process).

    Everything built at start (modules, the app, SQLAlchemy's metadata) lives as long as
    the process, yet each full collection walked all of it again: long pauses under
    load, costly in CPU. Freezing moves it out of the collector's sight; the higher
    first threshold lets short-lived request objects go by reference counting alone
    (cycles still get collected once 50,000 containers accumulate).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)
    _return_large_blocks()


# glibc's mallopt(3) parameters.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_LARGE_BLOCK = 128 * 1024  # glibc's own starting threshold


def _return_large_blocks() -> None:
    """Give the memory of a large request back to the system once it is answered.

    glibc serves blocks over 128 KiB with mmap and unmaps them when freed — until the
    first such block is freed: then it raises the threshold to that block's size, and
    later blocks as large (a body near the size limit, its decoded text, the message
    composed from it) come from the heap, which keeps them. On ``serve``, RSS grows with
    each large body without this, and stays flat after the first with it
    (tests/acceptance/test_body_memory.py). Setting the thresholds fixes them.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return
    mallopt(_M_MMAP_THRESHOLD, _LARGE_BLOCK)
    mallopt(_M_TRIM_THRESHOLD, _LARGE_BLOCK)


def event_loop_runner() -> asyncio.Runner:
    """On uvloop when it is installed (``uvicorn[standard]`` brings it, as the API runs
    on it): the runner's SMTP conversations and database hand-offs cost about a tenth
    less CPU there than on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - platforms without uvloop
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


def _graceful_exit(_signum: int, _frame: FrameType | None) -> None:
    """After uvicorn's graceful shutdown it re-raises the signal; we have stopped: exit 0."""


def _serve_http(settings: Settings, host: str | None, port: int | None, with_runner: bool) -> None:
    import uvicorn

    from mailbridge.api.app import create_app

    _configure_logging(settings)
    upgrade(settings.resolved_database_url, settings.database_schema)
    application = create_app(settings, with_runner=with_runner)
    config = uvicorn.Config(
        application,
        host=host or settings.host,
        port=port if port is not None else settings.port,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's loggers, access log included, go to the root's handler
        # Above info the access lines are dropped anyway, after being formatted per request.
        access_log=settings.log_level.lower() in ("trace", "debug", "info"),
        lifespan="on",
        proxy_headers=False,
        # Requests in flight get a part of the shutdown deadline; the runner the rest.
        timeout_graceful_shutdown=max(1, round(settings.shutdown_timeout * 0.3)),
    )
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _graceful_exit)
    settle_heap()
    uvicorn.Server(config).run()


@app.command()
def serve(host: HostOption = None, port: PortOption = None) -> None:
    """The API and the runner loops in one process (the embedded default)."""
    _serve_http(settings_from_env(), host, port, with_runner=True)


@app.command()
def api(host: HostOption = None, port: PortOption = None) -> None:
    """The API alone (run any number, with `mailbridge runner` beside them)."""
    _serve_http(settings_from_env(), host, port, with_runner=False)


@app.command()
def runner() -> None:
    """The runner alone: claims due work and runs the periodic ticks until SIGTERM."""
    from mailbridge.runner import Runner

    settings = settings_from_env()
    _configure_logging(settings)
    upgrade(settings.resolved_database_url, settings.database_schema)
    settle_heap()

    async def main() -> None:
        context = ServiceContext.from_settings(settings)
        try:
            await Runner(context).run_until_stopped()
        finally:
            await context.database.dispose()

    with event_loop_runner() as loop_runner:
        loop_runner.run(main())


@app.command()
def inbound(
    listen: Annotated[
        str | None, typer.Option("--listen", help="host:port (default MAILBRIDGE_INBOUND_SMTP)")
    ] = None,
    processes: Annotated[
        int, typer.Option("--processes", min=1, max=64, help="processes sharing the port")
    ] = 1,
) -> None:
    """The SMTP listener alone: receives mail for receiving domains, bounces, complaints
    and replies, until SIGTERM (run any number over PostgreSQL). ``--processes N``: N
    listeners on one socket, one per core (each one event loop is its limit)."""
    from mailbridge.cli.processes import run_forked
    from mailbridge.runner.signals import stop_on_signals
    from mailbridge.services import inbound as inbound_service

    settings = settings_from_env()
    _configure_logging(settings)
    upgrade(settings.resolved_database_url, settings.database_schema)
    where = inbound_service.parse_listen_address(listen or settings.inbound_smtp)
    if where is None:
        raise typer.BadParameter("the listener is off (MAILBRIDGE_INBOUND_SMTP=off)")
    listening = socket.create_server(where, backlog=1024)
    settle_heap()

    async def main() -> None:
        context = ServiceContext.from_settings(settings)
        stop = asyncio.Event()
        try:
            server, _handler = await inbound_service.start_listener(context, sock=listening)
            with stop_on_signals(stop.set):
                await stop.wait()
            server.close()
            # Conversations under way get the shutdown deadline to finish.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), settings.shutdown_timeout * 0.8)
        finally:
            await context.database.dispose()

    def listen_until_stopped() -> None:
        with event_loop_runner() as loop_runner:
            loop_runner.run(main())

    run_forked(processes, listen_until_stopped)


FIRST_OWNER = "owner@localhost"  # bootstrap's dashboard sign-in


@app.command()
def bootstrap(
    host: HostOption = None,
    port: PortOption = None,
) -> None:
    """First start: create a team and a first key when the database is new, and say what next."""
    settings = settings_from_env()
    upgrade(settings.resolved_database_url, settings.database_schema)
    base = f"http://{host or settings.host}:{port if port is not None else settings.port}"

    password = secrets.token_urlsafe(12)

    async def main() -> str | None:
        context = ServiceContext.from_settings(settings)
        try:
            async with context.database.session() as session:
                if await accounts.count_teams(session):
                    return None
                team = await accounts.create_team(
                    session, context.clock, "default", settings.default_plan
                )
                _key, token = await accounts.create_api_key(
                    session, context.clock, team.id, "first key"
                )
                await accounts.add_team_member(
                    session, context.clock, team, FIRST_OWNER, accounts.Role.OWNER,
                    await members.hash_password(password),
                )  # fmt: skip
                return token
        finally:
            await context.database.dispose()

    token = run(main)
    if token is None:
        typer.echo(
            "mailbridge: the database has a team already. A new key: "
            "`.venv/bin/mailbridge admin keys create --name NAME`"
        )
        return
    typer.echo(
        f"\nmailbridge: created team 'default' (plan {settings.default_plan}) and its first "
        "API key (shown only now):\n\n"
        f"    {token}\n\n"
        f"The dashboard: {base}/dashboard — sign in as {FIRST_OWNER} with the password\n\n"
        f"    {password}\n\n"
        "(shown only now; invite people from the Members page).\n\n"
        "Try it once the server is up:\n\n"
        f'    curl -s -H "Authorization: Bearer {token}" {base}/api-keys\n\n'
        "or with the command-line tool (README: The command-line tool):\n\n"
        f"    .venv/bin/mailbridge login --base-url {base}\n"
        "    .venv/bin/mailbridge doctor\n"
    )


if __name__ == "__main__":
    from mailbridge.cli.entry import main

    main()
