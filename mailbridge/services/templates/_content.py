"""Template content rules: what one version of a template may hold.

Names, subjects, sender and reply-to addresses have length limits, aliases are short
slugs that cannot pass for ids, and every variable the content uses is declared, so
that what a template accepts is what sending can render. Addresses are only checked
loosely here; the send pipeline checks them for real.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mailbridge.errors import InvalidFromAddress, ValidationError
from mailbridge.mail import templating
from mailbridge.mail.templating import Variable
from mailbridge.storage.queries import is_uuid

MAX_TEMPLATE_NAME_LENGTH = 200
MAX_ALIAS_LENGTH = 100
MAX_SUBJECT_LENGTH = 998
MAX_FROM_LENGTH = 640
MAX_REPLY_TO = 50

ALIAS_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
# Deliberately loose: the send pipeline checks addresses and domains for real.
ADDRESS_PATTERN = re.compile(r"[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+")
NAMED_ADDRESS_PATTERN = re.compile(r"[^<>]*<\s*([^<>]+?)\s*>")


@dataclass(frozen=True)
class TemplateContent:
    """What one version of a template holds."""

    name: str
    html: str
    from_address: str | None = None
    subject: str | None = None
    reply_to: tuple[str, ...] | None = None
    text: str | None = None
    variables: tuple[Variable, ...] = ()


def _address(value: str) -> str:
    named = NAMED_ADDRESS_PATTERN.fullmatch(value)
    return named.group(1) if named else value


def normalize_reply_to(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    addresses = (value,) if isinstance(value, str) else tuple(value)
    addresses = tuple(address.strip() for address in addresses)
    if len(addresses) > MAX_REPLY_TO:
        raise ValidationError(f"`reply_to` takes at most {MAX_REPLY_TO} addresses.")
    for address in addresses:
        if not ADDRESS_PATTERN.fullmatch(_address(address)):
            raise ValidationError(f"Invalid `reply_to` address `{address}`.")
    return addresses or None


def check_alias(alias: str | None) -> str | None:
    if alias is None:
        return None
    alias = alias.strip()
    if (
        not ALIAS_PATTERN.fullmatch(alias)
        or len(alias) > MAX_ALIAS_LENGTH
        or is_uuid(alias)  # an alias shaped like an id would make lookups ambiguous
    ):
        raise ValidationError(
            f"`alias` must be 1 to {MAX_ALIAS_LENGTH} letters, digits, `-` or `_`, and not a UUID."
        )
    return alias


def check_content(content: TemplateContent) -> TemplateContent:
    """``content`` tidied, or a 422 naming what is wrong with it."""
    name = content.name.strip()
    if not name or len(name) > MAX_TEMPLATE_NAME_LENGTH:
        raise ValidationError(f"`name` must be 1 to {MAX_TEMPLATE_NAME_LENGTH} characters.")
    if not content.html.strip():
        raise ValidationError("`html` must not be empty.")
    if content.subject is not None and len(content.subject) > MAX_SUBJECT_LENGTH:
        raise ValidationError(f"`subject` must be at most {MAX_SUBJECT_LENGTH} characters.")
    from_address = content.from_address.strip() if content.from_address is not None else None
    if from_address is not None and (
        len(from_address) > MAX_FROM_LENGTH or not ADDRESS_PATTERN.fullmatch(_address(from_address))
    ):
        raise InvalidFromAddress()
    problems = templating.declaration_problems(content.variables)
    if problems:
        raise ValidationError(" ".join(problems))
    undeclared = templating.undeclared_variables(
        (content.subject, content.html, content.text), content.variables
    )
    if undeclared:
        names = ", ".join(f"`{name}`" for name in undeclared)
        raise ValidationError(
            f"Undeclared variables used: {names}. Declare them in `variables` "
            "(FIRST_NAME, LAST_NAME, EMAIL, UNSUBSCRIBE_URL and contact.* need no declaration)."
        )
    return replace(content, name=name, from_address=from_address or None)
