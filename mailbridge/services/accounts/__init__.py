"""Accounts: who may call, on whose behalf, and how much.

Owns teams and members (``teams``, ``members``, ``member_sessions``), API keys
(``api_keys``), plans and their quotas (``quota_usage``) and the request log
(``request_logs``). The API's middleware authenticates through this face; every other
context charges quotas and locks teams through it.
"""

from __future__ import annotations

from mailbridge.services.accounts._api_keys import MAX_NAME_LENGTH as MAX_API_KEY_NAME_LENGTH
from mailbridge.services.accounts._api_keys import (
    Permission,
    api_key_view,
    create_api_key,
    list_api_keys,
    revoke_api_key,
)
from mailbridge.services.accounts._auth import Action, Principal, authenticate, bearer_token
from mailbridge.services.accounts._plans import plan_named
from mailbridge.services.accounts._quotas import QuotaLedger, lock_teams
from mailbridge.services.accounts._request_logs import (
    CapturedBody,
    LogEntry,
    RequestLogSink,
    get_log,
    list_logs,
    log_view,
    purge_old_logs,
)
from mailbridge.services.accounts._teams import (
    Role,
    count_teams,
    create_team,
    resolve_team,
    set_timezone,
)
from mailbridge.services.accounts._teams import add_member as add_team_member

__all__ = [
    "MAX_API_KEY_NAME_LENGTH",
    "Action",
    "CapturedBody",
    "LogEntry",
    "Permission",
    "Principal",
    "QuotaLedger",
    "RequestLogSink",
    "Role",
    "add_team_member",
    "api_key_view",
    "authenticate",
    "bearer_token",
    "count_teams",
    "create_api_key",
    "create_team",
    "get_log",
    "list_api_keys",
    "list_logs",
    "lock_teams",
    "log_view",
    "plan_named",
    "purge_old_logs",
    "resolve_team",
    "revoke_api_key",
    "set_timezone",
]
