"""Inboxes: an address of a receiving domain whose mail is read as threaded
conversations, with folders and labels (``services.inboxes``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailbridge.storage.tables.base import Base
from mailbridge.storage.types import IdColumnType, new_id

# The full-text index of inbox messages: dialect-specific (an FTS5 virtual table and its
# shadow tables on SQLite; a table with a generated tsvector on PostgreSQL), made by
# migration 0025 and kept out of the models (``services.inboxes._search``).
SEARCH_TABLE = "inbox_search"


def modelled(name: str | None, type_: str, _parents: object) -> bool:
    """Alembic's ``include_name``: whether the schema comparison looks at ``name``."""
    return not (type_ == "table" and name is not None and name.startswith(SEARCH_TABLE))


class Inbox(Base):
    __tablename__ = "inboxes"
    __table_args__ = (
        Index("ix_inboxes_team_created", "team_id", "created_at", "id"),
        # An address is one inbox's: received mail for it is filed there.
        Index("uq_inboxes_email_address", "email_address", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    domain_id: Mapped[str] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"))
    email_address: Mapped[str] = mapped_column(String(320))  # lower-case
    name: Mapped[str | None] = mapped_column(String(200))
    from_name: Mapped[str | None] = mapped_column(String(200))
    forwarding: Mapped[bool] = mapped_column(default=False)
    # The agent's settings (GET/PATCH /inboxes/:id/agent): what it is told, its tone, and
    # the actions it may take.
    agent_instructions: Mapped[str | None] = mapped_column(Text)
    agent_tone: Mapped[str | None] = mapped_column(String(32))
    agent_actions: Mapped[list[str]] = mapped_column(JSON, default=list)
    last_received: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class InboxThread(Base):
    """A conversation: the messages one ``References`` chain (or, failing that, one
    subject with one correspondent's domain) holds together."""

    __tablename__ = "inbox_threads"
    __table_args__ = (
        Index("ix_inbox_threads_inbox_latest", "inbox_id", "latest_at", "id"),
        Index("ix_inbox_threads_inbox_subject", "inbox_id", "subject_key"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    inbox_id: Mapped[str] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"))
    subject: Mapped[str | None] = mapped_column(Text)
    subject_key: Mapped[str] = mapped_column(String(200))  # the subject without Re:/Fwd:
    correspondent_domain: Mapped[str] = mapped_column(String(255))  # of the first sender
    from_address: Mapped[str | None] = mapped_column(Text)  # the first message's sender
    to: Mapped[list[str]] = mapped_column(JSON, default=list)
    cc: Mapped[list[str]] = mapped_column(JSON, default=list)
    folder: Mapped[str] = mapped_column(String(16))  # inbox archive spam sent trash
    read: Mapped[bool] = mapped_column(default=False)
    email_count: Mapped[int] = mapped_column(Integer, default=0)
    has_attachment: Mapped[bool] = mapped_column(default=False)
    assignee_id: Mapped[str | None] = mapped_column(IdColumnType())  # a member of the team
    latest_at: Mapped[datetime]  # the newest message's
    trashed_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class InboxMessage(Base):
    """A message of a thread: a received email (``inbound``) or one sent from the inbox
    (``outbound``); its content stays in that row — one message, two views. The id is
    that email's."""

    __tablename__ = "inbox_messages"
    __table_args__ = (
        Index("ix_inbox_messages_thread_created", "thread_id", "created_at", "id"),
        Index("ix_inbox_messages_inbox_message_id", "inbox_id", "message_id"),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    inbox_id: Mapped[str] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(ForeignKey("inbox_threads.id", ondelete="CASCADE"))
    direction: Mapped[str] = mapped_column(String(8))  # inbound outbound
    message_id: Mapped[str | None] = mapped_column(String(998))  # "<...>", lower-case
    read: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime]


class InboxLabel(Base):
    __tablename__ = "inbox_labels"
    __table_args__ = (Index("uq_inbox_labels_inbox_name", "inbox_id", "name", unique=True),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    inbox_id: Mapped[str] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    color: Mapped[str] = mapped_column(String(7))  # #RRGGBB
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class InboxThreadLabel(Base):
    __tablename__ = "inbox_thread_labels"

    thread_id: Mapped[str] = mapped_column(
        ForeignKey("inbox_threads.id", ondelete="CASCADE"), primary_key=True
    )
    label_id: Mapped[str] = mapped_column(
        ForeignKey("inbox_labels.id", ondelete="CASCADE"), primary_key=True
    )
    created_at: Mapped[datetime]


class InboxDraft(Base):
    """A message being written in an inbox: standalone, or a reply to a message of a
    thread; sent as an ordinary email (``email_id`` once sent)."""

    __tablename__ = "inbox_drafts"
    __table_args__ = (
        Index("ix_inbox_drafts_inbox_created", "inbox_id", "created_at", "id"),
        Index("uq_inbox_drafts_inbox_key", "inbox_id", "idempotency_key", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    inbox_id: Mapped[str] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"))
    thread_id: Mapped[str | None] = mapped_column(
        ForeignKey("inbox_threads.id", ondelete="SET NULL")
    )
    reply_to_email_id: Mapped[str | None] = mapped_column(IdColumnType())
    to: Mapped[list[str] | None] = mapped_column(JSON)
    cc: Mapped[list[str]] = mapped_column(JSON, default=list)
    bcc: Mapped[list[str]] = mapped_column(JSON, default=list)
    subject: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    html: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    email_id: Mapped[str | None] = mapped_column(IdColumnType())  # once sent
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class InboxDraftAttachment(Base):
    __tablename__ = "inbox_draft_attachments"
    __table_args__ = (Index("ix_inbox_draft_attachments_draft", "draft_id", "position"),)

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    draft_id: Mapped[str] = mapped_column(ForeignKey("inbox_drafts.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    filename: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(Integer)
    content: Mapped[bytes] = mapped_column(LargeBinary)


class InboxAgentCall(Base):
    """A received message offered to the inbox's agent (``MAILBRIDGE_INBOX_AGENT_URL``):
    due until its answer is applied, or until it fails for good."""

    __tablename__ = "inbox_agent_calls"
    __table_args__ = (
        Index("ix_inbox_agent_calls_due", "status", "due_at"),
        Index("ix_inbox_agent_calls_thread", "thread_id", "created_at"),
        # A message is offered once.
        Index("uq_inbox_agent_calls_email", "email_id", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumnType(), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    inbox_id: Mapped[str] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(ForeignKey("inbox_threads.id", ondelete="CASCADE"))
    email_id: Mapped[str] = mapped_column(IdColumnType())  # the inbox message offered
    status: Mapped[str] = mapped_column(String(16))  # pending, done, failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    due_at: Mapped[datetime]
    leased_by: Mapped[str | None] = mapped_column(String(100))
    lease_until: Mapped[datetime | None]
    # What came of the answer: the actions applied and those refused, with why.
    outcome: Mapped[dict[str, object] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
