"""What never reaches a log: the secrets mailbridge hands out, found by name and by shape.

The request log (``services.accounts``: bodies, query strings, paths) and the access
log (``cli.log_lines``: the path of uvicorn's line) mask through this module, so one
list says what a secret looks like:

- by name: a field called ``token``, ``secret``, ``password``, ``api_key``,
  ``authorization``, ``signing_secret``, ``signature``, ``cookie``, ``credential``,
  ``raw_url``, ``download_url``... is masked whole;
- by shape, wherever it stands (a value, a path, a query, a URL inside HTML): API keys
  ``mb_…``, member sessions ``mbs_…``, webhook secrets ``whsec_…``, invitation links
  ``/dashboard/invitations/<token>``, the signed links under ``/t/<kind>/<token>``
  (opens, clicks, unsubscribes, downloads, received mail) and ``/polls/vote/<token>``,
  and secret-named query parameters (``?token=``, ``&sig=``, ``X-Amz-Signature=``).
  The lead-in stays (``mb_[redacted]``, ``/t/a/[redacted]``): a log still tells what
  was there.

A signed link's token is the whole authority over what it names; an invitation's makes
its opener a member. Neither is less of a secret than a key.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Final
from urllib.parse import unquote_plus

REDACTED: Final = "[redacted]"

# A field whose name says it holds a secret, masked whole (searched, case-insensitive).
SECRET_NAME: Final = re.compile(
    r"token|secret|passw(?:or)?d|api_?key|authorization|signing|signature|cookie|credential"
    r"|^(?:raw|download)_url$",
    re.IGNORECASE,
)
# A query parameter whose name says it holds a secret.
_SECRET_PARAMETER = (
    r"[A-Za-z0-9_\-]*(?i:token|secret|passw(?:or)?d|api_?key|signature|sig|credential)"
)
# A secret's shape inside any text. Each alternative keeps its lead-in and masks the rest.
SECRET_TEXT: Final = re.compile(
    # mb_ (API keys), mbs_ (member sessions), whsec_ (webhook signing secrets): not after
    # a letter or digit ("thumb_nail" stays), glued to anything else ("x_mb_…") masked
    r"(?P<kind>(?<![A-Za-z0-9])(?:mbs?)_)[A-Za-z0-9_\-]+"
    # a signing secret is standard base64 (+ / =), percent-encoded too in a query
    r"|(?P<whsec>(?<![A-Za-z0-9])whsec_)(?:[A-Za-z0-9_\-+/=]|%2[BbFf]|%3[Dd])+"
    # capability links: an invitation, the signed /t/<kind>/ links, poll votes, shares
    r"|(?P<link>/dashboard/invitations/|/t/[a-z]{1,3}/|/polls/vote/|/share/)[^?#\s\"'<>\\]+"
    # secret-named query parameters
    rf"|(?P<param>[?&;]{_SECRET_PARAMETER}=)[^&#\s\"'<>]+"
)
# What a JSON body must contain (lower-cased) for redaction to change it: a secret
# name, the start of a secret shape, or an escape (``\u…``, ``\/``) that could spell one.
JSON_HINTS: Final = re.compile(
    rb"token|secret|passw(?:or)?d|api_?key|authorization|signing|signature|cookie|credential"
    rb"|raw_url|download_url|mbs?_|whsec_|/invitations/|/t/|/vote/|/share/|sig=|\\u|\\/"
)
# Cheap pre-check for text: without one of these, SECRET_TEXT cannot match.
_TEXT_HINTS = ("_", "/t/", "/invitations/", "/vote/", "/share/", "=")


def _mask(match: re.Match[str]) -> str:
    lead = next(group for group in match.groups() if group is not None)
    return lead + REDACTED


def mask_text(text: str) -> str:
    """``text`` with every secret shape in it masked (names play no part)."""
    if any(hint in text for hint in _TEXT_HINTS):
        return SECRET_TEXT.sub(_mask, text)
    return text


def redact(value: Any, bulky: Collection[str] = ()) -> Any:
    """``value`` (parsed JSON, or any nesting of dicts and lists) with every secret
    masked: values under secret-named keys whole, secret shapes in every string.
    A string over 256 characters under a key of ``bulky`` (attachment ``content``) is
    kept as its length: a log has no use for its bytes."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if SECRET_NAME.search(str(key)):
                out[key] = REDACTED
            elif key in bulky and isinstance(item, str) and len(item) > 256:
                out[key] = f"[{len(item)} characters omitted]"
            else:
                out[key] = redact(item, bulky)
        return out
    if isinstance(value, list | tuple):
        return [redact(item, bulky) for item in value]
    return value


def redact_query(query: str) -> str:
    """A raw query string (``a=1&token=…``) with secret-named parameters masked, and any
    parameter whose decoded value holds a secret's shape masked whole."""
    if not query:
        return query
    masked = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        decoded_name, decoded = unquote_plus(name), unquote_plus(value)
        if equals and (
            SECRET_NAME.search(decoded_name)
            or re.fullmatch(_SECRET_PARAMETER, decoded_name)
            or mask_text(decoded) != decoded
        ):
            masked.append(f"{name}={REDACTED}")
        else:
            masked.append(mask_text(pair))
    return "&".join(masked)
