"""Every table, importable from one place; one module per subject."""

from mailbridge.storage.tables.accounts import (
    ApiKey,
    AuditEvent,
    Member,
    MemberInvitation,
    MemberSession,
    RequestLog,
    Team,
)
from mailbridge.storage.tables.activity import ActivityEvent
from mailbridge.storage.tables.audiences import (
    Audience,
    Contact,
    ContactEngagement,
    ContactImport,
    ContactImportChunk,
    ContactLock,
    ContactProperty,
    ContactTopic,
    Segment,
    SegmentMember,
    Topic,
)
from mailbridge.storage.tables.automations import (
    Automation,
    AutomationRun,
    AutomationRunStep,
    AutomationVersion,
    EventDefinition,
)
from mailbridge.storage.tables.base import Base
from mailbridge.storage.tables.campaigns import Campaign, CampaignRecipient
from mailbridge.storage.tables.domains import Domain, DomainClaim
from mailbridge.storage.tables.emails import (
    Email,
    EmailAttachment,
    EmailEvent,
    EmailShare,
    IdempotencyRecord,
    InstanceSetting,
    QuotaUsage,
    Suppression,
)
from mailbridge.storage.tables.inbound import ReceivedAttachment, ReceivedEmail
from mailbridge.storage.tables.inboxes import (
    SEARCH_TABLE,
    Inbox,
    InboxAgentCall,
    InboxDraft,
    InboxDraftAttachment,
    InboxLabel,
    InboxMessage,
    InboxThread,
    InboxThreadLabel,
    modelled,
)
from mailbridge.storage.tables.polls import Poll, PollVote
from mailbridge.storage.tables.templates import Template, TemplateVersion
from mailbridge.storage.tables.webhooks import Webhook, WebhookDelivery

__all__ = [
    "SEARCH_TABLE",
    "ActivityEvent",
    "ApiKey",
    "Audience",
    "AuditEvent",
    "Automation",
    "AutomationRun",
    "AutomationRunStep",
    "AutomationVersion",
    "Base",
    "Campaign",
    "CampaignRecipient",
    "Contact",
    "ContactEngagement",
    "ContactImport",
    "ContactImportChunk",
    "ContactLock",
    "ContactProperty",
    "ContactTopic",
    "Domain",
    "DomainClaim",
    "Email",
    "EmailAttachment",
    "EmailEvent",
    "EmailShare",
    "EventDefinition",
    "IdempotencyRecord",
    "Inbox",
    "InboxAgentCall",
    "InboxDraft",
    "InboxDraftAttachment",
    "InboxLabel",
    "InboxMessage",
    "InboxThread",
    "InboxThreadLabel",
    "InstanceSetting",
    "Member",
    "MemberInvitation",
    "MemberSession",
    "Poll",
    "PollVote",
    "QuotaUsage",
    "ReceivedAttachment",
    "ReceivedEmail",
    "RequestLog",
    "Segment",
    "SegmentMember",
    "Suppression",
    "Team",
    "Template",
    "TemplateVersion",
    "Topic",
    "Webhook",
    "WebhookDelivery",
    "modelled",
]
