"""Every table, importable from one place; one module per subject."""

from mailbridge.storage.tables.accounts import ApiKey, Member, MemberSession, RequestLog, Team
from mailbridge.storage.tables.activity import ActivityEvent
from mailbridge.storage.tables.audiences import (
    Audience,
    Contact,
    ContactEngagement,
    ContactLock,
    ContactProperty,
    ContactTopic,
    Segment,
    SegmentMember,
    Topic,
)
from mailbridge.storage.tables.base import Base
from mailbridge.storage.tables.domains import Domain, DomainClaim
from mailbridge.storage.tables.templates import Template, TemplateVersion

__all__ = [
    "ActivityEvent",
    "ApiKey",
    "Audience",
    "Base",
    "Contact",
    "ContactEngagement",
    "ContactLock",
    "ContactProperty",
    "ContactTopic",
    "Domain",
    "DomainClaim",
    "Member",
    "MemberSession",
    "RequestLog",
    "Segment",
    "SegmentMember",
    "Team",
    "Template",
    "TemplateVersion",
    "Topic",
]
