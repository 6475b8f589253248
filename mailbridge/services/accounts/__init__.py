"""Accounts: who may call, on whose behalf, and how much.

Owns teams (``teams``; the ``members`` and ``member_sessions`` rows a team starts
with and the tokens they open), API keys (``api_keys``), plans and their quotas
(``quota_usage``) and the request log (``request_logs``). The API's middleware
authenticates through this face; every other context charges quotas and locks teams
through it. The people of a team — invitations, passwords, sessions, the audit log —
are the ``members`` context's.
"""

from __future__ import annotations

from mailbridge.services.accounts._api_keys import (
    MAX_API_KEY_NAME_LENGTH,
    Permission,
    api_key_view,
    create_api_key,
    list_api_keys,
    revoke_api_key,
    update_api_key,
)
from mailbridge.services.accounts._auth import (
    Action,
    Principal,
    authenticate,
    bearer_token,
    principal_cache,
)
from mailbridge.services.accounts._plans import plan_named
from mailbridge.services.accounts._quotas import (
    QuotaLedger,
    QuotaRaced,
    commit_charging,
    lock_teams,
    locks_last,
)
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
    Device,
    Role,
    add_team_member,
    count_teams,
    create_team,
    member_session_prefix,
    open_member_session,
    resolve_team,
    token_digest,
    update_team,
)

__all__ = [
    "MAX_API_KEY_NAME_LENGTH",
    "Action",
    "CapturedBody",
    "Device",
    "LogEntry",
    "Permission",
    "Principal",
    "QuotaLedger",
    "QuotaRaced",
    "RequestLogSink",
    "Role",
    "add_team_member",
    "api_key_view",
    "authenticate",
    "bearer_token",
    "commit_charging",
    "count_teams",
    "create_api_key",
    "create_team",
    "get_log",
    "list_api_keys",
    "list_logs",
    "lock_teams",
    "locks_last",
    "log_view",
    "member_session_prefix",
    "open_member_session",
    "plan_named",
    "principal_cache",
    "purge_old_logs",
    "resolve_team",
    "revoke_api_key",
    "token_digest",
    "update_api_key",
    "update_team",
]
