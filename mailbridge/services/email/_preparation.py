"""From a validated request body to the rows of one email, checking every rule of spec §4.1.

Nothing here writes: the result is handed to :mod:`mailbridge.services.email._acceptance`,
which charges the quota and stores it in one transaction.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import (
    InvalidAttachment,
    InvalidFromAddress,
    InvalidToAddress,
    MissingRequiredField,
    ValidationError,
)
from mailbridge.mail import templating
from mailbridge.mail.addresses import (
    Mailbox,
    is_reserved,
    parse_mailbox,
    parse_recipient,
    simulator_kind,
)
from mailbridge.mail.message_text import line_problem, text_problem
from mailbridge.services.accounts import Principal
from mailbridge.services.domains import sending_domain
from mailbridge.services.email._requests import AttachmentIn, SendEmailRequest
from mailbridge.services.email._scheduling import parse_send_time
from mailbridge.services.kernel import SendingDomain, ServiceContext
from mailbridge.services.polls import PollLinks, Voter, poll_links
from mailbridge.services.templates import PublishedTemplate, published_template
from mailbridge.storage.types import new_id

MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
MAX_EMAIL_ATTACHMENT_BYTES = 40 * 1024 * 1024


@dataclass
class PreparedEmail:
    """One email to accept: its row, attachments, and its recipients' fate so far.

    ``suppressed`` holds what the request itself rules out (reserved domains, the
    simulator's ``suppressed@``); the team's suppression list is applied when the
    email is stored (:mod:`mailbridge.services.email._acceptance`), in the same
    transaction as the quota, which then fills ``email.delivery_recipients``.
    """

    row: dict[str, Any]  # the ``emails`` row (plain values: stored with one bulk insert)
    to: list[str]  # lower-case
    candidates: list[str]  # lower-case, not yet checked against the suppression list
    attachments: list[dict[str, Any]] = field(default_factory=list)
    suppressed: list[str] = field(default_factory=list)
    label: str = ""  # "emails[3]: " inside a batch

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def charged_recipients(self) -> int:
        return len(self.row["delivery_recipients"] or self.candidates)

    def apply_suppression_list(self, listed: set[str]) -> None:
        """Drop listed addresses; 422 when no ``to`` recipient is left."""
        dropped = [address for address in self.candidates if address in listed]
        # Applied again when a group is stored again (one by one, or after a quota race).
        self.suppressed = [*self.suppressed, *(a for a in dropped if a not in self.suppressed)]
        self.row["delivery_recipients"] = [a for a in self.candidates if a not in listed]
        if all(address in self.suppressed for address in self.to):
            raise ValidationError(
                f"{self.label}All `to` recipients are suppressed; nothing was sent."
            )


def _nobody_left(to: list[str]) -> str:
    """Why no ``to`` recipient is left (spec §4.1 rule 2: a 422 validation_error), naming
    the reserved names for what they are rather than calling them suppressed."""
    reserved = [address for address in to if is_reserved(address)]
    if not reserved:
        return "All `to` recipients are suppressed; nothing was sent."
    return (
        f"`to` {', '.join(reserved[:3])} {'is' if len(reserved) == 1 else 'are'} on a reserved "
        "documentation or testing domain (RFC 2606, RFC 6761), which no mail is sent to"
        + ("" if len(reserved) == len(to) else ", and the other `to` recipients are suppressed")
        + "; nothing was sent. A test setup may send to them with "
        "MAILBRIDGE_ALLOW_RESERVED_RECIPIENTS=true."
    )


def _mailbox(text: str | None, template: PublishedTemplate | None) -> Mailbox:
    source = text or (template.from_address if template else None)
    if not source:
        raise MissingRequiredField.for_field("from")
    mailbox = parse_mailbox(source)
    if mailbox is None:
        raise InvalidFromAddress(
            f"Invalid `from` field {source!r}. "
            "Use `email@example.com` or `Name <email@example.com>`."
        )
    return mailbox


def _recipients(values: list[str], field_name: str) -> list[str]:
    addresses = []
    for value in values:
        address = parse_recipient(value) if isinstance(value, str) else None
        if address is None:
            raise InvalidToAddress(f"Invalid `{field_name}` address: {value!r}.")
        addresses.append(address)
    return addresses


def _reply_to(values: list[str]) -> list[str]:
    for value in values:
        if parse_mailbox(value) is None:
            raise ValidationError(f"Invalid `reply_to` address: {value!r}.")
    return list(values)


def _attachment(
    item: AttachmentIn, index: int, email_id: str, team_id: str, now: datetime
) -> dict[str, Any]:
    label = f"attachments[{index}]"
    if item.content in (None, "", []) and not item.path:
        raise InvalidAttachment(f"`{label}` needs either `content` or `path`.")
    content: bytes | None = None
    if item.content not in (None, "", []):
        if isinstance(item.content, list):
            try:
                content = bytes(item.content)
            except ValueError:
                raise InvalidAttachment(f"`{label}.content` is not a list of bytes.") from None
        else:
            try:
                content = base64.b64decode(item.content, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidAttachment(f"`{label}.content` is not valid base64.") from None
        if len(content) > MAX_ATTACHMENT_BYTES:
            raise InvalidAttachment(f"`{label}` is larger than 25 MB.")
    path = None
    if content is None:
        path = (item.path or "").strip()
        if not path.lower().startswith(("http://", "https://")):
            raise InvalidAttachment(f"`{label}.path` must be an http(s) URL.")
    filename = item.filename or (path.rsplit("/", 1)[-1].split("?", 1)[0] if path else "")
    if not filename:
        raise InvalidAttachment(f"`{label}` needs a `filename`.")
    content_type = (
        item.content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    )
    return dict(
        id=new_id(), email_id=email_id, team_id=team_id, filename=filename,
        content_type=content_type, content_id=item.content_id,
        size=len(content) if content is not None else None, path=path, content=content,
        created_at=now,
    )  # fmt: skip


def _sources(
    body: SendEmailRequest, template: PublishedTemplate | None
) -> tuple[str | None, str | None, str | None]:
    """The subject, html and text to render: the body's, else the template's."""
    subject = body.subject if body.subject is not None else (template.subject if template else None)
    html = body.html if body.html is not None else (template.html if template else None)
    text = body.text if body.text is not None else (template.text if template else None)
    return subject, html, text


def _poll_voter(contact_id: str | None, to: list[str]) -> Voter:
    """Whom a templated email's vote links vote for: its contact, or its one recipient."""
    if contact_id is None and len(to) != 1:
        raise ValidationError(
            "An email that embeds a poll must go to exactly one `to` recipient: "
            "its vote links are signed for that recipient."
        )
    return Voter.of(contact_id, to[0] if to else "")


def _render(
    sources: tuple[str | None, str | None, str | None],
    template: PublishedTemplate | None,
    variables: dict[str, Any],
    reserved: dict[str, str],
    polls: tuple[PollLinks, Voter] | None = None,
) -> tuple[str | None, str | None, str | None]:
    subject, html, text = sources
    if template is None:
        return subject, html, text
    declared = template.variables

    def render(source: str, *, as_html: bool = False) -> str:
        return templating.render(
            source, variables, declared=declared, reserved=reserved, html=as_html
        )

    def render_body(source: str, *, as_html: bool = False) -> str:
        if polls is None:
            return render(source, as_html=as_html)
        links, voter = polls
        return links.render(
            source, voter, html=as_html, around=lambda part: render(part, as_html=as_html)
        )

    return (
        render(subject) if subject else subject,
        render_body(html, as_html=True) if html else html,
        render_body(text) if text else text,
    )


def _check_rendered(subject: str | None, html: str | None, text: str | None) -> None:
    """What a template and its variables made must still fit in a message."""
    for name, value, problem_of in (
        ("subject", subject, line_problem), ("html", html, text_problem),
        ("text", text, text_problem),
    ):  # fmt: skip
        problem = problem_of(value) if value else None
        if problem:
            raise ValidationError(f"The rendered `{name}` {problem}.")


async def _sending_domain(context: ServiceContext, team_id: str, name: str) -> SendingDomain:
    async def load() -> SendingDomain:
        # A session of its own: the lookup may outlive this request (a refresh ahead runs
        # in the background), and a closed session would quietly open a connection again.
        async with context.database.session() as own:
            domain = await sending_domain(own, team_id, name)
        if domain is None:
            raise ValidationError(
                f"The {name} domain is not verified. Add and verify it on /domains."
            )
        return SendingDomain(domain.id, domain.name)

    return await context.sending_domains.get_or_load((team_id, name), load)


async def prepare_email(
    session: AsyncSession,
    context: ServiceContext,
    principal: Principal,
    body: SendEmailRequest,
    now: datetime,
    *,
    marketing: bool = False,
    contact_id: str | None = None,
    label: str = "",
) -> PreparedEmail:
    """Check ``body`` against every rule and build its rows (not yet stored)."""
    template = None
    variables: dict[str, Any] = {}
    reference = body.template_reference
    if reference is not None:
        template = await published_template(session, principal.team_id, reference.reference)
        variables = dict(reference.variables or {})
        problems = templating.value_problems(template.variables, variables)
        if problems:
            raise ValidationError(" ".join(problems))

    sender = _mailbox(body.from_, template)
    if not principal.may_send_from(sender.domain):
        raise ValidationError(f"This API key may only send from {principal.domain}.")
    domain = await _sending_domain(context, principal.team_id, sender.domain)

    to = _recipients(body.to, "to")
    cc = _recipients(body.cc, "cc")
    bcc = _recipients(body.bcc, "bcc")
    template_reply_to = list(template.reply_to or ()) if template else []
    reply_to = _reply_to(body.reply_to or template_reply_to)
    scheduled_at = parse_send_time(body.scheduled_at, now) if body.scheduled_at else None

    everyone = list(dict.fromkeys(a.lower() for a in [*to, *cc, *bcc]))
    suppressed: list[str] = []
    candidates: list[str] = []
    for address in everyone:
        kind = simulator_kind(address, context.settings.test_domain)
        if kind is not None and scheduled_at is not None:
            raise ValidationError(
                f"Mailbox-simulator address {address} works only for immediate sends."
            )
        if kind == "suppressed" or (
            is_reserved(address) and not context.settings.allow_reserved_recipients
        ):
            suppressed.append(address)
        else:
            candidates.append(address)
    lower_to = [address.lower() for address in to]
    if all(address in suppressed for address in lower_to):
        raise ValidationError(_nobody_left(lower_to))

    reserved = {"EMAIL": to[0]} if len(to) == 1 else {}
    sources = _sources(body, template)
    polls = None
    if template is not None:
        links = await poll_links(session, context, principal.team_id, sources[1:], strict=True)
        polls = (links, _poll_voter(contact_id, to)) if links is not None else None
    subject, html, text = _render(sources, template, variables, reserved, polls)
    _check_rendered(subject, html, text)
    if not subject:
        raise MissingRequiredField.for_field("subject")
    if not html and not text:
        raise ValidationError("An email needs `html` or `text` (or a template).")

    email_id = new_id()
    attachments = [
        _attachment(item, index, email_id, principal.team_id, now)
        for index, item in enumerate(body.attachments)
    ]
    total = sum(attachment["size"] or 0 for attachment in attachments)
    if total > MAX_EMAIL_ATTACHMENT_BYTES:
        raise InvalidAttachment("Attachments of one email may total at most 40 MB.")

    status = "scheduled" if scheduled_at else "queued"
    row = dict(
        id=email_id,
        team_id=principal.team_id,
        api_key_id=principal.api_key_id,
        domain_id=domain.id,
        from_address=sender.formatted(),
        from_email=sender.email,
        to=list(body.to),
        cc=list(body.cc),
        bcc=list(body.bcc),
        reply_to=reply_to,
        delivery_recipients=[],
        recipients_text="\n" + "\n".join(everyone) + "\n",
        subject=subject,
        html=html,
        text=text,
        headers=dict(body.headers),
        tags=[tag.model_dump() for tag in body.tags],
        template_id=template.template_id if template else None,
        template_version_id=template.version_id if template else None,
        contact_id=contact_id,
        campaign_id=None,
        marketing=marketing,
        status=status,
        last_event=status,
        scheduled_at=scheduled_at,
        due_at=scheduled_at or now,
        lease_owner=None,
        lease_until=None,
        attempts=0,
        message_id=f"<{email_id}@{domain.name}>",
        last_error=None,
        created_at=now,
        updated_at=now,
        sent_at=None,
    )
    return PreparedEmail(
        row=row, to=lower_to, candidates=candidates, attachments=attachments,
        suppressed=suppressed, label=label,
    )  # fmt: skip
