"""Bounces that are not (usable) DSNs: old Exim, qmail, sendmail, Exchange 2003 and friends.

Only a message that looks like a bounce gets here -- an ``X-Failed-Recipients`` header, a
``MAILER-DAEMON``/``postmaster`` sender, a "Mail Delivery System" name, a subject like a failure
or a delay notice (RFC 2047-decoded first: ``=?utf-8?q?Undelivered_Mail...?=``), or a
delivery-status part the DSN reader could not use -- because the detectors are heuristic: a
person's reply quoting a bounce must not become one.

What is tried, first answer wins:

1. ``flufl.bounce``'s detectors (``all_failures``): its permanent failures are hard (action
   ``failed``), its temporary ones -- delay and warning notices -- soft (action ``delayed``).
2. The per-recipient fields of a DSN among the message's own headers (``Final-Recipient``,
   ``Original-Recipient``: a broken MTA that flattened its report).
3. The addresses listed after a line like "The following addresses failed:" (Exim), "...had
   permanent fatal errors" (sendmail), "...recipients was aborted", "Delivery of email to this
   address" -- what flufl.bounce's detectors miss: its generic matchers refuse a domain with a
   hyphen, its Exim detector reads only ``X-Failed-Recipients``.

2 and 3 leave a forwarded message (``Fwd:``) alone; their recipients are failed and hard. For
all three, a message whose text says it will try again (or that has a warning's subject) and
does not say the error is permanent is a delay notice: its recipients are delayed and soft --
flufl.bounce's sendmail matcher calls "transient non-fatal errors" permanent. Status and
diagnostic are ``None``: text bounces have no fields to take them from.
"""

from __future__ import annotations

import re
from dataclasses import replace
from email import message_from_string
from email.message import Message

import flufl.bounce

from mailbridge.mail._dsn_reports import BouncedRecipient, recipient_address
from mailbridge.mail._report_ids import address, decoded, header, headers
from mailbridge.mail._report_parts import COPY_MARKER, message_fields, parts

_MAX_TEXT = 64_000  # of a report's own words; the copy of the original comes after them
_MAX_PARAGRAPHS = 50
_MAX_LINE = 1000

_BOUNCE_SENDER = re.compile(
    r"\b(?:mailer[-_]?daemon|mail[-_]?daemon|postmaster)@|mail delivery (?:system|subsystem)",
    re.IGNORECASE,
)
_BOUNCE_SUBJECT = re.compile(
    r"undeliver|delivery (?:failure|failed|has failed|problem|report)|"
    r"returned (?:mail|to sender)|failure notice|mail delivery failed|non-?delivery|"
    r"could not be delivered|nicht zustellbar|non remis|failed mail|"
    r"delivery (?:status )?notification|mail system error",
    re.IGNORECASE,
)
_WARNING_SUBJECT = re.compile(
    r"^\s*warning:.*(?:delay|could not send|not (?:yet )?been delivered|unknown|undeliver)|"
    r"(?:mail )?delivery (?:warning|delay(?:ed)?)|\(delay\)|delayed mail|message delayed|"
    r"not yet (?:been )?delivered",
    re.IGNORECASE,
)
_LIST_INTRO = re.compile(
    r"(?:following\s+(?:e-?mail\s+)?(?:address|recipient)\S*\s+(?:\S+\s+){0,3}?"
    r"(?:failed|aborted|rejected|had\s+(?:permanent|transient))"
    r"|(?:not\s+be\s+delivered|failed|undeliverable)\s+to\s+the\s+following\s+"
    r"(?:e-?mail\s+)?(?:address|recipient)"
    r"|delivery\s+of\s+(?:e-?mail|(?:your\s+)?message)\s+to\s+(?:this|the\s+following)\s+"
    r"(?:address|recipient))[^\n]*\n",
    re.IGNORECASE,
)
_LISTED_ADDRESS = re.compile(
    r"[\w.!#$%&'*+/=?^`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+"
)
_FORWARDED = re.compile(r"\s*(?:fwd?|wg|tr|rv|enc)\s*:", re.IGNORECASE)
_GENERATED_FROM = re.compile(r"generated\s+from\s+<?([^\s<>()]+@[^\s<>()]+)", re.IGNORECASE)
_TEMPORARY = re.compile(
    r"will\s+(?:continue|keep)\s+(?:to\s+)?try|attempts\s+will\s+continue|will\s+be\s+retried|"
    r"still\s+(?:being\s+)?(?:retried|trying)|has\s+been\s+(?:delayed|postponed)|"
    r"not\s+yet\s+been\s+delivered|transient\s+non-fatal|warning\s+message\s+only|"
    r"do\s+not\s+need\s+to\s+resend",
    re.IGNORECASE,
)
_PERMANENT = re.compile(
    r"permanent(?:ly)?\b|(?<!non-)fatal\s+error|no\s+such\s+user|user\s+unknown|"
    r"does\s+not\s+exist",
    re.IGNORECASE,
)


def looks_like_bounce(message: Message) -> bool:
    if header(message, "x-failed-recipients"):
        return True
    sender = decoded(" ".join(headers(message, "from")))
    subject = decoded(" ".join(headers(message, "subject")))
    return bool(
        _BOUNCE_SENDER.search(sender)
        or _BOUNCE_SUBJECT.search(subject)
        or _WARNING_SUBJECT.search(subject)
    )


def text_bounce_recipients(raw: bytes, message: Message) -> tuple[BouncedRecipient, ...]:
    """The failed or delayed recipients of a message that looks like a bounce; ``()`` when no
    detector finds an address."""
    text = _report_text(message)
    delay = _says_delayed(message, text)
    found = _detected(raw)
    if found:
        return tuple(_delayed(each) for each in found) if delay else found
    if _FORWARDED.match(decoded(" ".join(headers(message, "subject")))):
        return ()  # a person passing a bounce on: its text is the bounce's, verbatim
    in_headers = recipient_address(message_fields(message))
    recipients: dict[str, BouncedRecipient] = {}
    for each in [in_headers] if in_headers else _listed(text):
        bare = address(each)
        if bare is not None and bare.lower() not in recipients:
            recipient = BouncedRecipient(bare, None, "failed", None, hard=True)
            recipients[bare.lower()] = _delayed(recipient) if delay else recipient
    return tuple(recipients.values())


def _delayed(recipient: BouncedRecipient) -> BouncedRecipient:
    return replace(recipient, action="delayed", hard=False)


def _detected(raw: bytes) -> tuple[BouncedRecipient, ...]:
    """flufl.bounce's verdict. Its detectors were written for the compat32 message model and
    call string methods on header values, which compat32 hands out as ``Header`` objects when
    they hold undecodable bytes: so they get the message parsed from text, bytes decoded as
    UTF-8 (U+FFFD for the rest). A detector that still fails makes flufl give up (it logs the
    exception on the ``flufl.bounce`` logger): no verdict then."""
    try:
        compat = message_from_string(raw.decode("utf-8", "replace"))
        temporary, permanent = flufl.bounce.all_failures(compat)
    except Exception:
        return ()
    found: dict[str, BouncedRecipient] = {}
    for addresses, hard in ((permanent, True), (temporary, False)):
        for item in sorted(addresses):
            bare = address(item.decode("ascii", "replace"))
            if bare is None or bare.lower() in found:
                continue
            found[bare.lower()] = BouncedRecipient(
                address=bare,
                status=None,
                action="failed" if hard else "delayed",
                diagnostic=None,
                hard=hard,
            )
    return tuple(found.values())


def _report_text(message: Message) -> str:
    """The report's own words: its ``text/plain`` parts (not the original it carries), each
    up to the line that introduces the copy of the original."""
    texts: list[str] = []
    for part in parts(message):
        if part.get_content_type() != "text/plain" or part.is_multipart():
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        data = data[:_MAX_TEXT].replace(b"\r\n", b"\n")
        marker = COPY_MARKER.search(data)
        if marker:
            data = data[: marker.start()]
        charset = part.get_content_charset() or "utf-8"
        try:
            texts.append(data.decode(charset, "replace"))
        except (LookupError, ValueError):  # a charset Python does not know or cannot use
            texts.append(data.decode("utf-8", "replace"))
    return "\n\n".join(texts)


def _listed(text: str) -> list[str]:
    """The addresses in the paragraphs after the first line that introduces a list of failed
    recipients: each paragraph names one on its first line (or "generated from" one, Exim's
    word for the address an alias expanded from); the first that does not ends the list."""
    intro = _LIST_INTRO.search(text)
    if intro is None:
        return []
    found: list[str] = []
    paragraphs = re.split(r"\n[ \t]*\n", text[intro.end() :].strip("\n"), maxsplit=_MAX_PARAGRAPHS)
    for paragraph in paragraphs[:_MAX_PARAGRAPHS]:
        lines = paragraph.strip("\n").splitlines()
        if not lines:
            continue
        named = _LISTED_ADDRESS.findall(lines[0][:_MAX_LINE])
        if not named:
            generated = _GENERATED_FROM.search(paragraph)
            named = [generated.group(1)] if generated else []
        if not named:
            break
        found.extend(named)
    return found


def _says_delayed(message: Message, text: str) -> bool:
    """Whether a text bounce is a delay or warning notice: it says it will try again (or has
    a warning's subject) and does not say the error is permanent."""
    if _PERMANENT.search(text):
        return False
    subject = decoded(" ".join(headers(message, "subject")))
    return bool(_TEMPORARY.search(text) or _WARNING_SUBJECT.search(subject))
