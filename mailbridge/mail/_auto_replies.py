"""Auto-replies: vacation notices and other machine replies, told from people's replies.

RFC 3834 (``Auto-Submitted``) and the headers real responders add (Exchange, Gmail, Sieve
vacation, procmail/vacation(1)), so that a reply counts as a person's engagement only when a
person wrote it.
"""

from __future__ import annotations

import re
from email.message import Message

from mailbridge.mail._report_ids import decoded, first_token, header, headers
from mailbridge.mail._report_parts import parse

# Subjects Exchange/Outlook, Gmail, Sieve and others give automatic replies (several languages).
_AUTO_REPLY_SUBJECT = re.compile(
    r"^\s*(?:automatic reply|auto(?:matic)?[- ]?reply|auto|out of (?:the )?office|"
    r"automatische antwort|abwesenheitsnotiz|r[ée]ponse automatique|respuesta autom[áa]tica|"
    r"risposta automatica|automatisch antwoord|resposta autom[áa]tica|autosvar|"
    r"automaattinen vastaus|automatyczna odpowied[zź])\b\s*:?",
    re.IGNORECASE,
)
_SUPPRESS_AUTO = frozenset({"all", "oof", "autoreply"})
_AUTO_PRECEDENCE = frozenset({"auto_reply", "bulk", "junk", "list"})
_FALSY = frozenset({"no", "false", "0", "off"})


def is_auto_reply(message: Message | bytes) -> bool:
    """Whether a message was sent by a machine rather than a person; takes the raw bytes or the
    parsed message (an ``EmailMessage``; a compat32 ``Message`` works too). Never raises
    (``False`` for what cannot be read).

    True for: RFC 3834 ``Auto-Submitted`` other than ``no`` (``auto-replied``,
    ``auto-generated``, ...); ``X-Autoreply`` or ``X-Autorespond`` (unless ``no``/``false``);
    ``Precedence: auto_reply|bulk|junk|list``; a null ``Return-Path: <>`` (bounces and most
    vacation responders send with it).

    ``X-Auto-Response-Suppress`` asks *others* not to answer a message automatically; Exchange
    puts ``All`` on its own automatic replies but Outlook and Exchange also put it (``DR, OOF,
    AutoReply``...) on people's mail, so alone it says nothing. It counts only together with
    another sign of an Exchange automatic reply: a subject like "Automatic reply:"/"Out of
    Office"/"Abwesenheitsnotiz:" or an ``X-MS-Exchange-Inbox-Rules-Loop`` or
    ``X-MS-Exchange-Generated-Message-Source`` header (set on what inbox rules send)."""
    try:
        parsed = parse(message) if isinstance(message, bytes | bytearray) else message
        return _is_auto_reply(parsed)
    except Exception:
        return False


def _is_auto_reply(message: Message) -> bool:
    auto_submitted = first_token(header(message, "auto-submitted"))
    if auto_submitted and auto_submitted != "no":
        return True
    for name in ("x-autoreply", "x-autorespond"):
        value = header(message, name)
        if value is not None and first_token(value) not in _FALSY:
            return True
    if first_token(header(message, "precedence")) in _AUTO_PRECEDENCE:
        return True
    return_path = header(message, "return-path")
    if return_path is not None and re.fullmatch(r"<\s*>", return_path):
        return True
    suppress = {
        token.strip().lower()
        for value in headers(message, "x-auto-response-suppress")
        for token in value.split(",")
    }
    if suppress & _SUPPRESS_AUTO:
        subject = decoded(header(message, "subject") or "")
        return bool(
            _AUTO_REPLY_SUBJECT.match(subject)
            or header(message, "x-ms-exchange-inbox-rules-loop") is not None
            or header(message, "x-ms-exchange-generated-message-source") is not None
        )
    return False
