"""What a campaign sends, fixed when it is sent, and each recipient's copy of it.

At send the campaign's own fields and, with a ``template_id``, the template's published
content (the campaign's fields win) become a :class:`Content`, stored on the campaign:
a template published again later does not change a campaign already under way. An A/B
test adds one :class:`Content` per arm (the campaign's, changed by the arm).

Each recipient's subject and body are rendered from it with the contact's fields
(``{{{FIRST_NAME|there}}}``, ``{{{contact.plan}}}``) and the campaign's variables; a
``preview_text`` opens the HTML body as a hidden preheader.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailbridge.errors import ValidationError
from mailbridge.mail import templating
from mailbridge.mail.templating import Variable
from mailbridge.services import templates
from mailbridge.services.polls import PollLinks, Voter
from mailbridge.storage.tables import Campaign

_BODY_TAG = re.compile(r"<body\b[^>]*>", re.IGNORECASE)
PREHEADER = (
    '<div style="display:none;max-height:0;overflow:hidden;mso-hide:all" aria-hidden="true">'
    "{}</div>"
)


@dataclass(frozen=True)
class Content:
    from_address: str
    subject: str
    html: str | None
    text: str | None
    reply_to: list[str] = field(default_factory=list)
    preview_text: str | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    declared: tuple[Variable, ...] = ()
    template_id: str | None = None
    template_version_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["declared"] = [variable.to_json() for variable in self.declared]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Content:
        declared = tuple(Variable.from_json(item) for item in data.get("declared", ()))
        return cls(**{**data, "declared": declared})

    def with_variant(self, variant: dict[str, Any]) -> Content:
        """This content as an A/B arm changes it."""
        return replace(
            self,
            from_address=variant.get("from") or self.from_address,
            subject=variant.get("subject") or self.subject,
            html=variant.get("html") if variant.get("html") is not None else self.html,
            text=variant.get("text") if variant.get("text") is not None else self.text,
        )

    def personalized(
        self, contact: dict[str, Any], polls: PollLinks | None = None
    ) -> tuple[str, str | None, str | None]:
        """The subject, html and text one contact receives; ``polls`` renders the vote links
        of the polls the body embeds, signed for this contact."""
        declared = self.declared

        def render(text: str | None, *, as_html: bool = False) -> str | None:
            if not text:
                return text
            if "{{{" not in text:
                return text
            return templating.render(
                text, self.variables, declared=declared, contact=contact, html=as_html
            )

        def render_body(text: str | None, *, as_html: bool = False) -> str | None:
            if not text or polls is None or "{{{" not in text:
                return render(text, as_html=as_html)
            voter = Voter.of(contact.get("id"), str(contact.get("email") or ""))
            return polls.render(
                text, voter, html=as_html, around=lambda part: render(part, as_html=as_html) or ""
            )

        html = render_body(self.html, as_html=True)
        if html and self.preview_text:
            html = _with_preheader(html, self.preview_text)
        return render(self.subject) or self.subject, html, render_body(self.text)


def _with_preheader(html: str, preview_text: str) -> str:
    preheader = PREHEADER.format(html_lib.escape(preview_text))
    opening = _BODY_TAG.search(html)
    if opening is None:
        return preheader + html
    return html[: opening.end()] + preheader + html[opening.end() :]


async def resolve_content(session: AsyncSession, campaign: Campaign) -> Content:
    """The campaign's content for sending; 422 naming what is missing."""
    template = None
    if campaign.template_id is not None:
        template = await templates.published_template(
            session, campaign.team_id, campaign.template_id
        )
        problems = templating.value_problems(template.variables, campaign.variables or {})
        if problems:
            raise ValidationError(" ".join(problems))
    from_address = campaign.from_address or (template.from_address if template else None)
    subject = campaign.subject or (template.subject if template else None)
    html = campaign.html if campaign.html is not None else (template.html if template else None)
    text = campaign.text if campaign.text is not None else (template.text if template else None)
    reply_to = list(campaign.reply_to or (template.reply_to if template else None) or [])
    # Spec §4.5: a campaign lacking one of these is a validation_error.
    if not from_address:
        raise ValidationError("A campaign needs a `from` (or a template with one) to be sent.")
    if not subject:
        raise ValidationError("A campaign needs a `subject` (or a template with one) to be sent.")
    if not html and not text:
        raise ValidationError("A campaign needs `html` or `text` (or a `template_id`).")
    return Content(
        from_address=from_address,
        subject=subject,
        html=html,
        text=text,
        reply_to=reply_to,
        preview_text=campaign.preview_text,
        variables=dict(campaign.variables or {}),
        declared=template.variables if template else (),
        template_id=template.template_id if template else None,
        template_version_id=template.version_id if template else None,
    )


def stored_content(campaign: Campaign) -> dict[str, Content]:
    """The campaign's contents by arm: ``""`` alone, or ``A`` and ``B`` (and ``""``, the
    rest's, once a winner is known)."""
    stored = campaign.content or {}
    return {arm: Content.from_json(data) for arm, data in stored.items()}
