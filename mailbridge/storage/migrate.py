"""Alembic, driven from code: ``mailbridge db upgrade`` and the start of ``serve``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(url: str, schema: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["schema"] = schema
    return config


def upgrade(url: str, schema: str | None = None, revision: str = "head") -> None:
    """Bring the database to ``revision``; must not run inside an event loop."""
    command.upgrade(alembic_config(url, schema), revision)


async def upgrade_async(url: str, schema: str | None = None, revision: str = "head") -> None:
    """The same, from async code: Alembic's async env runs its own loop in a thread."""
    await asyncio.to_thread(upgrade, url, schema, revision)
