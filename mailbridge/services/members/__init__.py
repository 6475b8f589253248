"""Members: the people of a team and how they get in.

Membership and roles (who may change whom), invitations, signing in with a password
(argon2 hashes; sign-in limits are the dashboard's), member sessions listed and
revoked, and the audit log of who changed what. Owns ``member_invitations`` and
``audit_events``, and the password and session rows of ``members`` and
``member_sessions``; tokens, roles and authentication are the accounts context's.
"""

from __future__ import annotations

from mailbridge.services.members._audit import audit_view, list_audit
from mailbridge.services.members._invitations import (
    accept_invitation,
    invite_member,
    masked_address,
    open_invitation,
    pending_invitations,
    withdraw_invitation,
)
from mailbridge.services.members._member_sessions import (
    list_sessions,
    revoke_member_sessions,
    revoke_session,
    session_view,
)
from mailbridge.services.members._members import (
    change_role,
    list_members,
    member_by_email,
    member_view,
    remove_member,
)
from mailbridge.services.members._sign_in import (
    MIN_PASSWORD_LENGTH,
    change_password,
    hash_password,
    set_password,
    sign_in,
    sign_out,
)

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "accept_invitation",
    "audit_view",
    "change_password",
    "change_role",
    "hash_password",
    "invite_member",
    "list_audit",
    "list_members",
    "list_sessions",
    "masked_address",
    "member_by_email",
    "member_view",
    "open_invitation",
    "pending_invitations",
    "remove_member",
    "revoke_member_sessions",
    "revoke_session",
    "session_view",
    "set_password",
    "sign_in",
    "sign_out",
    "withdraw_invitation",
]
