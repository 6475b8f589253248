"""Accounts: who may call, on whose behalf, and how much.

Owns teams and members (``teams``, ``members``, ``member_sessions``, the audit log
``audit_events``), API keys (``api_keys``), plans and their quotas (``quota_usage``)
and the request log (``request_logs``). The API's middleware authenticates through
this face; every other context charges quotas and locks teams through it.
"""

from __future__ import annotations

from mailbridge.services.accounts._api_keys import MAX_NAME_LENGTH as MAX_API_KEY_NAME_LENGTH
from mailbridge.services.accounts._api_keys import (
    Permission,
    api_key_view,
    create_api_key,
    list_api_keys,
    revoke_api_key,
    update_api_key,
)
from mailbridge.services.accounts._audit import audit_view, list_audit
from mailbridge.services.accounts._auth import Action, Principal, authenticate, bearer_token
from mailbridge.services.accounts._invitations import (
    INVITATION_LIFETIME,
    accept_invitation,
    invite_member,
    masked_address,
    open_invitation,
    pending_invitations,
    withdraw_invitation,
)
from mailbridge.services.accounts._member_sessions import (
    list_sessions,
    revoke_member_sessions,
    revoke_session,
    session_view,
)
from mailbridge.services.accounts._members import (
    change_role,
    list_members,
    member_by_email,
    member_view,
    remove_member,
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
from mailbridge.services.accounts._sign_in import (
    MIN_PASSWORD_LENGTH,
    change_password,
    hash_password,
    set_password,
    sign_in,
    sign_out,
)
from mailbridge.services.accounts._teams import (
    Device,
    Role,
    count_teams,
    create_team,
    resolve_team,
    set_timezone,
)
from mailbridge.services.accounts._teams import add_member as add_team_member

__all__ = [
    "INVITATION_LIFETIME",
    "MAX_API_KEY_NAME_LENGTH",
    "MIN_PASSWORD_LENGTH",
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
    "accept_invitation",
    "add_team_member",
    "api_key_view",
    "audit_view",
    "authenticate",
    "bearer_token",
    "change_password",
    "change_role",
    "commit_charging",
    "count_teams",
    "create_api_key",
    "create_team",
    "get_log",
    "hash_password",
    "invite_member",
    "list_api_keys",
    "list_audit",
    "list_logs",
    "list_members",
    "list_sessions",
    "lock_teams",
    "locks_last",
    "log_view",
    "masked_address",
    "member_by_email",
    "member_view",
    "open_invitation",
    "pending_invitations",
    "plan_named",
    "purge_old_logs",
    "remove_member",
    "resolve_team",
    "revoke_api_key",
    "revoke_member_sessions",
    "revoke_session",
    "session_view",
    "set_password",
    "set_timezone",
    "sign_in",
    "sign_out",
    "update_api_key",
    "withdraw_invitation",
]
