"""Which API and which key: flags, then the environment, then a named profile.

Profiles live in ``config.json`` under the platform's config directory (platformdirs:
``~/.config/mailbridge`` on Linux; ``MAILBRIDGE_CONFIG_DIR`` overrides it), written by
``mailbridge login`` with mode 0600: ``{"current": "default", "profiles": {"default":
{"api_key": "mb_…", "base_url": "http://127.0.0.1:8000"}}}``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from mailbridge.cli.client._failures import cli_error

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_PROFILE = "default"


def config_path() -> Path:
    folder = os.environ.get("MAILBRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("mailbridge")
    return Path(folder) / "config.json"


def read_config() -> dict[str, Any]:
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {"profiles": {}}
    except (OSError, ValueError) as exc:
        raise cli_error(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise cli_error(f"{path} is not a mailbridge config file")
    return data


def save_profile(name: str, api_key: str, base_url: str) -> Path:
    """Write (or replace) profile ``name`` and make it the current one; the file is 0600."""
    data = read_config()
    data["profiles"][name] = {"api_key": api_key, "base_url": base_url}
    data["current"] = name
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(data, handle, indent=2)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)
    return path


@dataclass(frozen=True)
class Target:
    base_url: str
    api_key: str | None
    profile: str | None


def resolve(api_key: str | None, base_url: str | None, profile: str | None) -> Target:
    """Flags (typer also fills them from MAILBRIDGE_API_KEY / _BASE_URL / _PROFILE), then
    the profile named or current."""
    data = read_config()
    name = profile or data.get("current")
    chosen: dict[str, Any] = {}
    if name:
        chosen = data["profiles"].get(name) or {}
        if profile and not chosen:
            known = ", ".join(sorted(data["profiles"])) or "none yet: run mailbridge login"
            raise cli_error(f"no profile named {profile!r} ({known})")
    return Target(
        base_url=(base_url or chosen.get("base_url") or DEFAULT_BASE_URL).rstrip("/"),
        api_key=api_key or chosen.get("api_key"),
        profile=name if chosen else None,
    )
