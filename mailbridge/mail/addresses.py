"""Email addresses as the send endpoints accept them, and the mailbox simulator's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.headerregistry import Address
from email.utils import formataddr
from functools import cached_property, lru_cache

from email_validator import EmailNotValidError, validate_email
from email_validator.rfc_constants import (
    CASE_INSENSITIVE_MAILBOX_NAMES,
    DOT_ATOM_TEXT,
    EMAIL_MAX_LENGTH,
)


def format_mailbox(name: str | None, address: str) -> str:
    """``Name <address>`` for a header, the name quoted or RFC 2047-encoded as needed.
    ``formataddr`` refuses an internationalized local part (``zoë@...``): such a message
    goes out with SMTPUTF8 (RFC 6532), where name and address are raw UTF-8."""
    if not name:
        return address
    if address.isascii():
        return formataddr((name, address), charset="utf-8")
    local, _, domain = address.rpartition("@")
    return str(Address(display_name=name, username=local, domain=domain))


# "Name <email@domain>" with an optional quoted name; the bare form is tried first.
NAMED = re.compile(r'^\s*(?P<name>"[^"]*"|[^<>"]*?)\s*<(?P<email>[^<>\s]+)>\s*$')
SIMULATOR_KINDS = frozenset({"delivered", "bounced", "complained", "suppressed"})


@dataclass(frozen=True)
class Mailbox:
    name: str | None
    email: str  # normalized: domain lower-case, local part as given

    @property
    def domain(self) -> str:
        return self.email.rsplit("@", 1)[1]

    @cached_property  # parse_mailbox hands out the same Mailbox for a repeated sender
    def _formatted(self) -> str:
        return format_mailbox(self.name, self.email)

    def formatted(self) -> str:
        return self._formatted


RESERVED_DOMAINS = frozenset({"example.com", "example.net", "example.org"})
RESERVED_TLDS = frozenset({"test", "invalid", "localhost", "example"})


def domain_of(address: str) -> str:
    return address.rsplit("@", 1)[-1].lower().rstrip(".")


def is_reserved(address: str) -> bool:
    """On a reserved documentation or local-testing domain (RFC 2606, RFC 6761)."""
    domain = domain_of(address)
    if domain in RESERVED_DOMAINS or any(domain.endswith("." + d) for d in RESERVED_DOMAINS):
        return True
    return domain.rsplit(".", 1)[-1] in RESERVED_TLDS


DOMAIN_LABELS = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?$")


def _valid(address: str) -> str | None:
    """The normalized address, or None. Addresses on reserved domains are valid here (they
    are suppressed later, not refused), though email-validator rejects special-use names."""
    local, at, domain = address.rpartition("@")
    if at and is_reserved(address):
        if not DOMAIN_LABELS.match(domain.lower()) or _valid(f"{local}@stand-in.dev") is None:
            return None
        return f"{local}@{domain.lower().rstrip('.')}"
    if at and DOT_ATOM_TEXT.match(local) and local.lower() not in CASE_INSENSITIVE_MAILBOX_NAMES:
        # The common shape, answered as email-validator would (tests compare the two): a
        # plain ASCII dot-atom is its own normal form, and the domain's verdict is cached.
        plain = _plain_domain(domain)
        if plain is not None and len(address) <= EMAIL_MAX_LENGTH:
            return f"{local}@{plain}"
    return _validated(address)


def _validated(address: str) -> str | None:
    """email-validator's answer for the whole address."""
    try:
        result = validate_email(address, check_deliverability=False, allow_smtputf8=True)
    except EmailNotValidError:
        return None
    return f"{result.local_part}@{result.domain.lower()}"


@lru_cache(maxsize=4096)
def _plain_domain(domain: str) -> str | None:
    """The normalized domain when email-validator accepts it as plain ASCII (no IDNA form
    to convert), else None: such a domain's addresses take the whole validation."""
    try:
        result = validate_email(f"a@{domain}", check_deliverability=False, allow_smtputf8=True)
    except EmailNotValidError:
        return None
    if result.domain != result.ascii_domain or len(result.domain) != len(domain):
        return None
    return result.domain.lower()


# Senders repeat from request to request and full validation is costly: the answer
# (a frozen Mailbox or None) is a pure function of the text, so it is remembered.
@lru_cache(maxsize=4096)
def parse_mailbox(text: str) -> Mailbox | None:
    """``email@domain`` or ``Name <email@domain>``; None when it is neither."""
    text = text.strip()
    if not text or "\r" in text or "\n" in text:
        return None
    bare = _valid(text) if "<" not in text else None
    if bare is not None:
        return Mailbox(None, bare)
    match = NAMED.match(text)
    if match is None:
        return None
    email = _valid(match["email"])
    if email is None:
        return None
    name = match["name"].strip().strip('"').strip() or None
    return Mailbox(name, email)


def parse_recipient(text: str) -> str | None:
    """A recipient's bare address (``Name <a@b>`` accepted too), or None if invalid."""
    mailbox = parse_mailbox(text)
    return mailbox.email if mailbox is not None else None


def simulator_kind(address: str, test_domain: str) -> str | None:
    """``delivered``/``bounced``/``complained``/``suppressed`` for a simulator address."""
    local, _, domain = address.lower().rpartition("@")
    if domain != test_domain.lower():
        return None
    kind = local.split("+", 1)[0]
    return kind if kind in SIMULATOR_KINDS else None


def header_address(mailbox: Mailbox) -> Address:
    local, _, domain = mailbox.email.rpartition("@")
    return Address(display_name=mailbox.name or "", username=local, domain=domain)
