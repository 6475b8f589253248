"""Inbound mail: what mailbridge receives itself, with no provider in between.

Owns ``received_emails`` and ``received_attachments`` (and the content-addressed blobs
under the data directory): the SMTP listener (``_listener``; DATA read and refused for
its real cause by ``_smtp``), routing (``_routing``) and storing a message rows first
(``_receiving``, ``_writer``, ``_storing``: a row per envelope recipient), parsing it
within bounds (``_parsing`` over the depth- and part-capped parser of ``_mime``, in a
worker process with a time limit for anything but small simple mail: ``_parse_worker``),
deciding what a report may change (``_reports``: what a DSN, an ARF report or a reply
says is ``mail.inbound_reports``; the email context records it), and reading it back
(``_reading``).
"""

from __future__ import annotations

from mailbridge.services.inbound._listener import parse_listen_address, start_listener
from mailbridge.services.inbound._reading import (
    LINK_LIFETIME,
    Links,
    attachment_content,
    attachment_for_download,
    attachment_view,
    attachments_of,
    attachments_of_many,
    check_flag,
    get_attachment,
    get_received,
    list_attachments,
    list_received,
    raw_for_download,
    received_summary,
    received_view,
    receiving_page,
)

__all__ = [
    "LINK_LIFETIME",
    "Links",
    "attachment_content",
    "attachment_for_download",
    "attachment_view",
    "attachments_of",
    "attachments_of_many",
    "check_flag",
    "get_attachment",
    "get_received",
    "list_attachments",
    "list_received",
    "parse_listen_address",
    "raw_for_download",
    "received_summary",
    "received_view",
    "receiving_page",
    "start_listener",
]
