"""Reading a received message's headers without trusting them, and the ids in them.

Header values are read raw (``raw_items``), so the same code serves a message parsed with
``policy.default`` or with ``compat32`` and never runs a policy's header parser on hostile
input; only a subject or a sender's name is RFC 2047-decoded, for matching.

The ids: mailbridge sends with the envelope sender ``bounces+<email id>@<return path>`` (the
VERP address; now ``bounces+<email id>-<tag>@<return path>``, the tag 16 characters of
base32, an HMAC that whoever routes the report checks: this module only accepts its form) and
the Message-ID ``<email id@domain>``; both give back the email id, a lower-case UUID.
"""

from __future__ import annotations

import re
from email.header import decode_header, make_header
from email.message import Message

from mailbridge.mail.return_path import read_return_path

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_DOMAIN = r"[^@\s<>]+"
_ID_AT_DOMAIN = re.compile(rf"({_UUID})@{_DOMAIN}")
_BRACKETED = re.compile(r"<([^<>\s]+)>")
_TYPE_PREFIX = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*;\s*")  # "rfc822;", "smtp;", "X-Postfix;"
_FOLD = re.compile(r"\r?\n(?=[ \t])")


def unbracket(value: str) -> str:
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1].strip()
    return value


def verp_email_id(address: str) -> str | None:
    """The email id in a ``bounces+<email id>@...`` or ``bounces+<email id>-<tag>@...`` address
    (angle brackets allowed; any case), lower-case; ``None`` for any other address."""
    found = read_return_path(address)
    return found.email_id if found is not None else None


def message_email_id(message_id: str) -> str | None:
    """The email id in a Message-ID ``<email id@domain>`` (brackets optional), lower-case;
    ``None`` when the left part is not a UUID."""
    match = _ID_AT_DOMAIN.fullmatch(unbracket(message_id))
    return match.group(1).lower() if match else None


def clean(value: str) -> str:
    """A raw header value unfolded, as text (undecodable bytes replaced, NULs dropped)."""
    try:
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return _FOLD.sub("", value).replace("\x00", "").strip()


def headers(message: Message, name: str) -> list[str]:
    """Every value of a header, raw (``raw_items`` never runs the policy's header parsers)."""
    name = name.lower()
    return [clean(str(value)) for key, value in message.raw_items() if key.strip().lower() == name]


def header(message: Message, name: str) -> str | None:
    values = headers(message, name)
    return values[0] if values else None


def decoded(value: str) -> str:
    """A header value with its RFC 2047 encoded words decoded (``=?utf-8?q?...?=``); as it is
    when they cannot be (an unknown charset, a broken word)."""
    try:
        return str(make_header(decode_header(value)))
    except Exception:
        return value


def first_token(value: str | None) -> str:
    """``auto-replied`` from ``auto-replied (vacation)``, ``abuse`` from ``abuse; x=y``."""
    if not value:
        return ""
    return re.split(r"[\s;(,]", value.strip(), maxsplit=1)[0].lower()


def message_id(value: str | None) -> str | None:
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


def address_type(value: str | None) -> str | None:
    """``rfc822`` from ``rfc822; <user@host>`` (lower-case); ``None`` without a type."""
    match = _TYPE_PREFIX.match(value) if value else None
    return match.group(1).lower() if match else None


def address(value: str | None) -> str | None:
    """``user@host`` from ``rfc822; <user@host>``; ``None`` when there is no address."""
    if not value:
        return None
    bare = unbracket(_TYPE_PREFIX.sub("", value, count=1))
    if not bare or "@" not in bare or re.search(r"[\s<>]", bare):
        return None
    return bare


def without_type(value: str) -> str:
    """A DSN field's value without its ``smtp;``-like type."""
    return _TYPE_PREFIX.sub("", value, count=1)


def referenced_message_ids(message: Message) -> list[str]:
    """The Message-IDs in ``In-Reply-To`` then ``References``, in order, without repeats, each
    as ``<...>`` (a bare ``id@host`` without brackets is bracketed). Never raises."""
    found: dict[str, None] = {}
    try:
        for value in [*headers(message, "in-reply-to"), *headers(message, "references")]:
            ids = [f"<{match}>" for match in _BRACKETED.findall(value)]
            if not ids:
                ids = [f"<{token}>" for token in value.split() if "@" in token and "<" not in token]
            for each in ids:
                found.setdefault(each, None)
    except Exception:
        pass
    return list(found)


def id_from_message_id(value: str | None) -> str | None:
    found = message_id(value)
    return message_email_id(found) if found else None


def id_from_address(value: str | None) -> str | None:
    found = address(value)
    return verp_email_id(found) if found else None
