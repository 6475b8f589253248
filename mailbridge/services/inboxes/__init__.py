"""Inboxes: an address on a receiving domain whose mail is read as threaded
conversations, with folders and labels.

``_inboxes`` (the inbox, found by id or address), ``_threading`` (which thread a
message joins), ``_filing`` (the activity consumer that files received mail, registered
here with the activity dispatch, as the automations' triggers are), ``_threads``
(threads and their messages), ``_labels``, ``_events`` (what webhooks are told of a
thread's changes), ``_agent`` and ``_agent_calls`` (the agent's settings, and each new
message offered to it). Owns ``inboxes``, ``inbox_threads``,
``inbox_messages``, ``inbox_labels``, ``inbox_thread_labels``; the messages' content
stays in ``received_emails`` and ``emails``.
"""

from __future__ import annotations

from mailbridge.services.inboxes._actions import act_on_thread, thread_forward
from mailbridge.services.inboxes._agent import agent_view, update_agent
from mailbridge.services.inboxes._agent_calls import (
    MAX_ACTIONS,
    AgentRequest,
    agent_call_failed,
    agent_calls_of,
    checked_action,
    claim_agent_calls,
    finish_agent_call,
    next_agent_call_due,
    parse_answer,
    release_agent_calls,
    take_agent_call,
)
from mailbridge.services.inboxes._drafts import (
    attachment_payload,
    create_draft,
    delete_draft,
    draft_files,
    draft_list_item,
    draft_view,
    get_draft,
    list_drafts,
    mark_sent,
    open_drafts,
    send_payload,
    threads_with_drafts,
    update_draft,
)
from mailbridge.services.inboxes._filing import InboxFiler, file_received, file_sent
from mailbridge.services.inboxes._forwards import forward_files, forward_payload
from mailbridge.services.inboxes._inboxes import (
    create_inbox,
    delete_inbox,
    find_inbox,
    inbox_view,
    list_inboxes,
    unread_counts,
    update_inbox,
)
from mailbridge.services.inboxes._labels import (
    create_label,
    delete_label,
    get_label,
    label_thread,
    label_view,
    list_labels,
    unlabel_thread,
    update_label,
)
from mailbridge.services.inboxes._links import Links
from mailbridge.services.inboxes._replies import reply_payload, sender
from mailbridge.services.inboxes._search import (
    Match,
    search_match,
    search_scope,
    thread_filters,
)
from mailbridge.services.inboxes._threading import subject_key
from mailbridge.services.inboxes._threads import (
    FOLDERS,
    delete_thread,
    empty_trash,
    get_message,
    get_thread,
    label_summary,
    list_messages,
    list_threads,
    message_references,
    thread_labels,
    thread_summary,
    thread_view,
    update_thread,
)
from mailbridge.services.webhooks import register_consumer

register_consumer(InboxFiler.name, InboxFiler)

__all__ = [
    "FOLDERS",
    "MAX_ACTIONS",
    "AgentRequest",
    "InboxFiler",
    "Links",
    "Match",
    "act_on_thread",
    "agent_call_failed",
    "agent_calls_of",
    "agent_view",
    "attachment_payload",
    "checked_action",
    "claim_agent_calls",
    "create_draft",
    "create_inbox",
    "create_label",
    "delete_draft",
    "delete_inbox",
    "delete_label",
    "delete_thread",
    "draft_files",
    "draft_list_item",
    "draft_view",
    "empty_trash",
    "file_received",
    "file_sent",
    "find_inbox",
    "finish_agent_call",
    "forward_files",
    "forward_payload",
    "get_draft",
    "get_label",
    "get_message",
    "get_thread",
    "inbox_view",
    "label_summary",
    "label_thread",
    "label_view",
    "list_drafts",
    "list_inboxes",
    "list_labels",
    "list_messages",
    "list_threads",
    "mark_sent",
    "message_references",
    "next_agent_call_due",
    "open_drafts",
    "parse_answer",
    "release_agent_calls",
    "reply_payload",
    "search_match",
    "search_scope",
    "send_payload",
    "sender",
    "subject_key",
    "take_agent_call",
    "thread_filters",
    "thread_forward",
    "thread_labels",
    "thread_summary",
    "thread_view",
    "threads_with_drafts",
    "unlabel_thread",
    "unread_counts",
    "update_agent",
    "update_draft",
    "update_inbox",
    "update_label",
    "update_thread",
]
