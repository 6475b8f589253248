"""Facts from a received message: a bounce, a complaint, an auto-reply, the messages it refers to.

Pure functions (no database, no network) over the raw bytes the inbound SMTP listener received,
parsed with the standard library's ``email`` package (``policy.default``). ``parse_report`` never
raises: whatever the bytes, it answers a ``Bounce``, a ``Complaint`` or ``None``.

What is recognized, tried in this order:

1. An RFC 5965 feedback report (ARF: Yahoo's complaint feedback loop, Microsoft JMRP, most ISP
   FBLs): a ``message/feedback-report`` part, normally inside ``multipart/report;
   report-type=feedback-report``. It gives ``Feedback-Type`` (``abuse``, ``fraud``, ``virus``,
   ``other``, ``not-spam``, and ``auth-failure`` for DMARC failure reports -- the caller decides
   which types count as a complaint; ``unknown`` when the field is missing), ``User-Agent``, and
   the complaining recipient from ``Original-Rcpt-To`` (else Microsoft's
   ``X-HmXmrOriginalRecipient`` in the embedded original, when it is not redacted).
2. An RFC 3464 delivery status notification (Gmail, Outlook/Exchange, Postfix, modern Exim): a
   ``message/delivery-status`` (or RFC 6533 ``message/global-delivery-status``) part. Each
   per-recipient block whose ``Action`` is ``failed`` or ``delayed`` (or, without an ``Action``,
   whose ``Status`` is 5.x.x or 4.x.x) becomes a ``BouncedRecipient``: the address from
   ``Final-Recipient`` (else ``Original-Recipient``) without its ``rfc822;`` type, the
   ``Status`` code, and the ``Diagnostic-Code`` without its ``smtp;`` type, whitespace collapsed.
   A recipient is soft (``hard=False``) when the action is ``delayed`` or the status is 4.x.x
   (a message Postfix gave up on after its queue lifetime says ``failed`` with 4.4.1: the address
   may well be fine), hard otherwise. A report with no failed or delayed recipient (``relayed``,
   ``delivered``) is ``None``.
3. Any other bounce (old Exim and qmail text bounces, Exchange 2003 and friends), handed to
   ``flufl.bounce``'s detectors: its permanent failures are hard (action ``failed``), its
   temporary ones soft (action ``delayed``); status and diagnostic are ``None``. The detectors are
   heuristic, so they only see a message that looks like a bounce (an ``X-Failed-Recipients``
   header, a ``MAILER-DAEMON``/``postmaster`` sender, a "Mail Delivery System" display name, or a
   bounce-like subject); a person's reply quoting one is not a bounce.

Everything else (replies, auto-replies, success notifications) is ``None``.

How the original email is found (``original_email_id``, a mailbridge email id, lower-case), first
match wins:

1. the envelope recipient(s) the listener accepted the report for: mailbridge sends with the
   envelope sender ``bounces+<email id>@<return path label>.<domain>``, where bounces go;
2. the original's ``Message-ID`` (``<email id@domain>``), from the embedded ``message/rfc822``
   (``message/global``) or ``text/rfc822-headers`` part, else -- for a text bounce -- the header
   block after the "copy of the message" line;
3. the original's ``Return-Path`` header (the VERP address again, as the receiver recorded it);
4. then, less direct: the report's own fields naming the original (a DSN's
   ``X-Original-Message-ID``/``X-Postfix-Sender``, an ARF's ``Original-Mail-From``), the VERP
   address the report says it was delivered to (``Delivered-To``, ``X-Original-To``,
   ``Envelope-To``), and the report's ``In-Reply-To``/``References`` (Gmail and Exchange set them
   to the original's Message-ID).

An id found this way is only a UUID of the right shape: the caller checks that such an email
exists (and belongs to the account the report was addressed to) before acting on it.

``is_auto_reply`` tells vacation notices and other machine replies from people's replies (RFC 3834
and the headers real responders add), and ``referenced_message_ids`` lists the Message-IDs a reply
refers to, so a reply can be threaded to the email it answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from email import message_from_string, policy
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser, BytesParser

import flufl.bounce

__all__ = [
    "Bounce",
    "BouncedRecipient",
    "Complaint",
    "is_auto_reply",
    "message_email_id",
    "parse_report",
    "referenced_message_ids",
    "verp_email_id",
]

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_DOMAIN = r"[^@\s<>]+"
_VERP = re.compile(rf"bounces\+({_UUID})@{_DOMAIN}", re.IGNORECASE)
_ID_AT_DOMAIN = re.compile(rf"({_UUID})@{_DOMAIN}")
_BRACKETED = re.compile(r"<([^<>\s]+)>")
_STATUS = re.compile(r"([245])\.\d{1,3}\.\d{1,3}")
_TYPE_PREFIX = re.compile(r"^\s*[A-Za-z][\w.-]*\s*;\s*")  # "rfc822;", "smtp;", "X-Postfix;"
_FOLD = re.compile(r"\r?\n(?=[ \t])")
_MAX_DEPTH = 16  # MIME nesting followed; real reports use three or four levels
_MAX_DIAGNOSTIC = 1000

_ORIGINAL_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
_ORIGINAL_HEADERS_TYPES = frozenset(
    {"text/rfc822-headers", "message/rfc822-headers", "message/global-headers"}
)
_DSN_TYPES = frozenset({"message/delivery-status", "message/global-delivery-status"})
_FEEDBACK_TYPE = "message/feedback-report"

# The line a text bounce puts before its copy of the original (Exim, qmail, sendmail, others).
_COPY_MARKER = re.compile(
    rb"^[^\n]*(?:copy of the (?:original )?message|original message follows|"
    rb"below this line is a copy|returned message|undelivered message)[^\n]*\n",
    re.IGNORECASE | re.MULTILINE,
)
_BOUNCE_SENDER = re.compile(
    r"\b(?:mailer[-_]?daemon|mail[-_]?daemon|postmaster)@|mail delivery (?:system|subsystem)",
    re.IGNORECASE,
)
_BOUNCE_SUBJECT = re.compile(
    r"undeliver|delivery (?:status notification|failure|failed|has failed|problem|report)|"
    r"returned (?:mail|to sender)|failure notice|mail delivery failed|non-?delivery|"
    r"could not be delivered|nicht zustellbar|non remis",
    re.IGNORECASE,
)
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


@dataclass(frozen=True)
class BouncedRecipient:
    address: str
    status: str | None  # the enhanced status code, e.g. "5.1.1"
    action: str | None  # "failed" or "delayed", lower-case; None when the report gave none
    diagnostic: str | None  # the remote server's answer, e.g. "550 5.1.1 User unknown"
    hard: bool  # permanent: stop sending to this address


@dataclass(frozen=True)
class Bounce:
    recipients: tuple[BouncedRecipient, ...]  # never empty
    original_message_id: str | None  # "<...>"
    original_email_id: str | None


@dataclass(frozen=True)
class Complaint:
    feedback_type: str  # lower-case: "abuse", "fraud", ...
    original_message_id: str | None  # "<...>"
    original_email_id: str | None
    original_recipient: str | None
    user_agent: str | None


# ---------------------------------------------------------------------------------------------
# Ids


def _unbracket(value: str) -> str:
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1].strip()
    return value


def verp_email_id(address: str) -> str | None:
    """The email id in a ``bounces+<email id>@...`` address (angle brackets allowed; the prefix
    in any case), lower-case; ``None`` for any other address."""
    match = _VERP.fullmatch(_unbracket(address))
    return match.group(1).lower() if match else None


def message_email_id(message_id: str) -> str | None:
    """The email id in a Message-ID ``<email id@domain>`` (brackets optional), lower-case;
    ``None`` when the left part is not a UUID."""
    match = _ID_AT_DOMAIN.fullmatch(_unbracket(message_id))
    return match.group(1).lower() if match else None


# ---------------------------------------------------------------------------------------------
# Reading headers without trusting them


def _clean(value: str) -> str:
    """A raw header value unfolded, as text (undecodable bytes replaced, NULs dropped)."""
    try:
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return _FOLD.sub("", value).replace("\x00", "").strip()


def _headers(message: Message, name: str) -> list[str]:
    """Every value of a header, raw (``raw_items`` never runs the policy's header parsers)."""
    name = name.lower()
    return [_clean(value) for key, value in message.raw_items() if key.strip().lower() == name]


def _header(message: Message, name: str) -> str | None:
    values = _headers(message, name)
    return values[0] if values else None


def _first_token(value: str | None) -> str:
    """``auto-replied`` from ``auto-replied (vacation)``, ``abuse`` from ``abuse; x=y``."""
    if not value:
        return ""
    return re.split(r"[\s;(,]", value.strip(), maxsplit=1)[0].lower()


def _message_id(value: str | None) -> str | None:
    """The first ``<...>`` in a header value; a bare ``id@host`` is bracketed."""
    if not value:
        return None
    match = _BRACKETED.search(value)
    if match:
        return f"<{match.group(1)}>"
    bare = value.strip()
    if bare and "@" in bare and not re.search(r"[\s<>]", bare):
        return f"<{bare}>"
    return None


def _address(value: str | None) -> str | None:
    """``user@host`` from ``rfc822; <user@host>``; ``None`` when there is no address."""
    if not value:
        return None
    bare = _unbracket(_TYPE_PREFIX.sub("", value, count=1))
    if not bare or "@" not in bare or re.search(r"[\s<>]", bare):
        return None
    return bare


def _status(value: str | None) -> str | None:
    match = _STATUS.match(value.strip()) if value else None
    return match.group(0) if match else None


def _diagnostic(value: str | None) -> str | None:
    if not value:
        return None
    text = re.sub(r"\s+", " ", _TYPE_PREFIX.sub("", value, count=1)).strip()
    return text[:_MAX_DIAGNOSTIC] or None


# ---------------------------------------------------------------------------------------------
# Walking the report


def _parse(raw: bytes) -> EmailMessage:
    return BytesParser(policy=policy.default).parsebytes(raw)


def _parts(message: Message, depth: int = 0) -> Iterator[Message]:
    """The message and its MIME parts, not descending into embedded messages (the original)."""
    yield message
    if depth >= _MAX_DEPTH or message.get_content_maintype() != "multipart":
        return
    payload = message.get_payload()
    if isinstance(payload, list):
        for part in payload:
            if isinstance(part, Message):
                yield from _parts(part, depth + 1)


def _find(message: Message, types: Iterable[str]) -> Message | None:
    wanted = frozenset(types)
    return next((part for part in _parts(message) if part.get_content_type() in wanted), None)


def _field_blocks(text: str) -> list[dict[str, str]]:
    """``Name: value`` blocks separated by blank lines (a DSN's body), first value of a name."""
    blocks: list[dict[str, str]] = []
    for chunk in re.split(r"\r?\n[ \t]*\r?\n", text):
        fields: dict[str, str] = {}
        current: str | None = None  # the field continuation lines extend
        for line in chunk.splitlines():
            if line[:1] in (" ", "\t"):
                if current is not None:
                    fields[current] += " " + line.strip()
                continue
            key, sep, value = line.partition(":")
            name = key.strip().lower()
            if not sep or not name or name in fields:
                current = None
                continue
            fields[name] = value.strip()
            current = name
        if fields:
            blocks.append({name: _clean(value) for name, value in fields.items()})
    return blocks


def _message_fields(message: Message) -> dict[str, str]:
    fields: dict[str, str] = {}
    for key, value in message.raw_items():
        fields.setdefault(key.strip().lower(), _clean(value))
    return fields


def _payload_text(part: Message) -> str:
    """A part's body as text: undecoded ``get_payload()`` would turn non-ASCII UTF-8 (an
    RFC 6533 address) into U+FFFD."""
    data = part.get_payload(decode=True)
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    payload = part.get_payload()
    return payload if isinstance(payload, str) else ""


def _report_blocks(part: Message) -> list[dict[str, str]]:
    """The field blocks of a delivery-status or feedback-report part, however it was parsed:
    the email package splits ``message/delivery-status`` into one message per block, and parses
    other ``message/*`` types as one message whose body holds any further blocks."""
    payload = part.get_payload()
    if isinstance(payload, str):
        return _field_blocks(_payload_text(part))
    blocks: list[dict[str, str]] = []
    for block in payload if isinstance(payload, list) else []:
        if not isinstance(block, Message):
            continue
        fields = _message_fields(block)
        if fields:
            blocks.append(fields)
        if isinstance(block.get_payload(), str):
            blocks.extend(_field_blocks(_payload_text(block)))
    return blocks


def _original(message: Message) -> Message | None:
    """The original message (or its headers) a report carries."""
    for part in _parts(message):
        content_type = part.get_content_type()
        if content_type not in _ORIGINAL_MESSAGE_TYPES | _ORIGINAL_HEADERS_TYPES:
            continue
        payload = part.get_payload()
        if isinstance(payload, list):  # message/*: the email package parsed it already
            if payload and isinstance(payload[0], Message):
                return payload[0]
            continue
        data = part.get_payload(decode=True)  # text/rfc822-headers
        if isinstance(data, bytes) and data.strip():
            return BytesHeaderParser(policy=policy.default).parsebytes(data.lstrip())
    return _original_in_text(message)


def _original_in_text(message: Message) -> Message | None:
    """The header block after "This is a copy of the message" in a text bounce."""
    for part in _parts(message):
        if part.get_content_type() != "text/plain":
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        data = data.replace(b"\r\n", b"\n")
        marker = _COPY_MARKER.search(data)
        if marker:
            headers = BytesHeaderParser(policy=policy.default).parsebytes(
                data[marker.end() :].lstrip(b"\n")
            )
            if headers.keys():
                return headers
    return None


# ---------------------------------------------------------------------------------------------
# The report


def parse_report(
    raw: bytes, envelope_recipients: Sequence[str] = (), message: Message | None = None
) -> Bounce | Complaint | None:
    """The bounce or complaint ``raw`` reports, else ``None``; never raises.

    ``envelope_recipients``: the RCPT TO addresses the message was accepted for (a VERP address
    among them names the original email most reliably). ``message``: ``raw`` already parsed
    (any policy: only raw header values are read; it is not parsed again)."""
    try:
        return _parse_report(bytes(raw), envelope_recipients, message)
    except Exception:  # hostile or broken input: no fact rather than an error
        return None


def _parse_report(
    raw: bytes, envelope_recipients: Sequence[str], parsed: Message | None
) -> Bounce | Complaint | None:
    message = parsed if parsed is not None else _parse(raw)
    feedback = _find(message, (_FEEDBACK_TYPE,))
    if feedback is not None:
        return _complaint(message, feedback, envelope_recipients)
    status_part = _find(message, _DSN_TYPES)
    if status_part is not None:
        blocks = _report_blocks(status_part)
        per_message = next((block for block in blocks if not _is_recipient_block(block)), {})
        recipient_blocks = [block for block in blocks if _is_recipient_block(block)]
        if recipient_blocks:
            recipients = _dsn_recipients(recipient_blocks)
            if not recipients:
                return None  # a success notification (relayed, delivered, expanded)
            return _bounce(message, recipients, per_message, envelope_recipients)
    if status_part is not None or _looks_like_bounce(message):
        recipients = _detected_recipients(raw)
        if recipients:
            return _bounce(message, recipients, {}, envelope_recipients)
    return None


def _is_recipient_block(block: dict[str, str]) -> bool:
    return any(name in block for name in ("final-recipient", "original-recipient", "action"))


def _dsn_recipients(blocks: list[dict[str, str]]) -> tuple[BouncedRecipient, ...]:
    recipients: dict[str, BouncedRecipient] = {}
    for block in blocks:
        action = _first_token(block.get("action")) or None
        status = _status(block.get("status"))
        if action is None and status is not None and status[0] in "45":
            implied = "failed" if status[0] == "5" else "delayed"
        else:
            implied = action or ""
        if implied not in ("failed", "delayed"):
            continue
        address = _address(block.get("final-recipient")) or _address(
            block.get("original-recipient")
        )
        if address is None or address.lower() in recipients:
            continue
        hard = implied == "failed" and not (status is not None and status.startswith("4"))
        recipients[address.lower()] = BouncedRecipient(
            address=address,
            status=status,
            action=action,
            diagnostic=_diagnostic(block.get("diagnostic-code")),
            hard=hard,
        )
    return tuple(recipients.values())


def _looks_like_bounce(message: Message) -> bool:
    if _header(message, "x-failed-recipients"):
        return True
    sender = " ".join(_headers(message, "from"))
    subject = " ".join(_headers(message, "subject"))
    return bool(_BOUNCE_SENDER.search(sender) or _BOUNCE_SUBJECT.search(subject))


def _detected_recipients(raw: bytes) -> tuple[BouncedRecipient, ...]:
    """flufl.bounce's verdict. Its detectors were written for the compat32 message model and
    call string methods on header values, which compat32 hands out as ``Header`` objects when
    they hold undecodable bytes: so they get the message parsed from text, bytes decoded as
    UTF-8 (U+FFFD for the rest). A detector that still fails makes flufl give up (it logs the
    exception on the ``flufl.bounce`` logger): no bounce then."""
    try:
        compat = message_from_string(raw.decode("utf-8", "replace"))
        temporary, permanent = flufl.bounce.all_failures(compat)
    except Exception:
        return ()
    found: dict[str, BouncedRecipient] = {}
    for addresses, hard in ((permanent, True), (temporary, False)):
        for item in sorted(addresses):
            address = _address(item.decode("ascii", "replace"))
            if address is None or address.lower() in found:
                continue
            found[address.lower()] = BouncedRecipient(
                address=address,
                status=None,
                action="failed" if hard else "delayed",
                diagnostic=None,
                hard=hard,
            )
    return tuple(found.values())


def _bounce(
    message: Message,
    recipients: tuple[BouncedRecipient, ...],
    per_message: dict[str, str],
    envelope_recipients: Sequence[str],
) -> Bounce:
    original = _original(message)
    message_id = _message_id(_header(original, "message-id")) if original is not None else None
    message_id = message_id or _message_id(per_message.get("x-original-message-id"))
    email_id = _original_email_id(
        message,
        original,
        envelope_recipients,
        extra_ids=[per_message.get("x-original-message-id")],
        extra_addresses=[per_message.get("x-postfix-sender")],
    )
    return Bounce(recipients=recipients, original_message_id=message_id, original_email_id=email_id)


def _complaint(
    message: Message, feedback: Message, envelope_recipients: Sequence[str]
) -> Complaint:
    fields: dict[str, str] = {}
    for block in _report_blocks(feedback):
        for name, value in block.items():
            fields.setdefault(name, value)
    original = _original(message)
    recipient = _address(fields.get("original-rcpt-to"))
    if recipient is None and original is not None:
        recipient = _address(_header(original, "x-hmxmroriginalrecipient"))
    return Complaint(
        feedback_type=_first_token(fields.get("feedback-type")) or "unknown",
        original_message_id=(
            _message_id(_header(original, "message-id")) if original is not None else None
        ),
        original_email_id=_original_email_id(
            message,
            original,
            envelope_recipients,
            extra_ids=[],
            extra_addresses=[fields.get("original-mail-from")],
        ),
        original_recipient=recipient,
        user_agent=fields.get("user-agent") or None,
    )


def _original_email_id(
    message: Message,
    original: Message | None,
    envelope_recipients: Sequence[str],
    *,
    extra_ids: list[str | None],
    extra_addresses: list[str | None],
) -> str | None:
    """The mailbridge email id a report is about, in the order the module docstring gives."""
    candidates: list[str | None] = [verp_email_id(address) for address in envelope_recipients]
    if original is not None:
        candidates.append(_id_from_message_id(_header(original, "message-id")))
        candidates.extend(_id_from_address(value) for value in _headers(original, "return-path"))
    candidates.extend(_id_from_message_id(value) for value in extra_ids)
    candidates.extend(_id_from_address(value) for value in extra_addresses)
    for name in ("delivered-to", "x-original-to", "envelope-to"):
        candidates.extend(_id_from_address(value) for value in _headers(message, name))
    candidates.extend(message_email_id(value) for value in referenced_message_ids(message))
    return next((candidate for candidate in candidates if candidate), None)


def _id_from_message_id(value: str | None) -> str | None:
    message_id = _message_id(value)
    return message_email_id(message_id) if message_id else None


def _id_from_address(value: str | None) -> str | None:
    address = _address(value)
    return verp_email_id(address) if address else None


# ---------------------------------------------------------------------------------------------
# Replies


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
        parsed = _parse(message) if isinstance(message, bytes | bytearray) else message
        return _is_auto_reply(parsed)
    except Exception:
        return False


def _is_auto_reply(message: Message) -> bool:
    auto_submitted = _first_token(_header(message, "auto-submitted"))
    if auto_submitted and auto_submitted != "no":
        return True
    for name in ("x-autoreply", "x-autorespond"):
        value = _header(message, name)
        if value is not None and _first_token(value) not in _FALSY:
            return True
    if _first_token(_header(message, "precedence")) in _AUTO_PRECEDENCE:
        return True
    return_path = _header(message, "return-path")
    if return_path is not None and re.fullmatch(r"<\s*>", return_path):
        return True
    suppress = {
        token.strip().lower()
        for value in _headers(message, "x-auto-response-suppress")
        for token in value.split(",")
    }
    if suppress & _SUPPRESS_AUTO:
        subject = _header(message, "subject") or ""
        return bool(
            _AUTO_REPLY_SUBJECT.match(subject)
            or _header(message, "x-ms-exchange-inbox-rules-loop") is not None
            or _header(message, "x-ms-exchange-generated-message-source") is not None
        )
    return False


def referenced_message_ids(message: Message) -> list[str]:
    """The Message-IDs in ``In-Reply-To`` then ``References``, in order, without repeats, each
    as ``<...>`` (a bare ``id@host`` without brackets is bracketed). Never raises."""
    found: dict[str, None] = {}
    try:
        for value in [*_headers(message, "in-reply-to"), *_headers(message, "references")]:
            ids = [f"<{match}>" for match in _BRACKETED.findall(value)]
            if not ids:
                ids = [f"<{token}>" for token in value.split() if "@" in token and "<" not in token]
            for message_id in ids:
                found.setdefault(message_id, None)
    except Exception:
        pass
    return list(found)
