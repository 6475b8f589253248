"""Persistence: tables, the engine/session factory, migrations and query helpers."""
