"""Shared by every tier."""

from __future__ import annotations

import os

# Tests never read the developer's own settings.
for _name in list(os.environ):
    if _name.startswith("MAILBRIDGE_"):
        del os.environ[_name]
