"""send_email: email the run's contact from a published template.

Public config ``{template: {id}, variables?, from?, subject?, reply_to?}``; stored as
type ``send`` with the template's content snapshotted when the graph is written:
``{from, subject, html, text, template_id, variables?, reply_to?}``. Sending is
idempotent per run and step (the mailer's key), and an unsubscribed contact is
skipped, not failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from mailbridge.engine.conditions import resolve_value
from mailbridge.engine.execution import Execution
from mailbridge.engine.ports import OutgoingEmail, References, SendRefused
from mailbridge.engine.runs import Fail, Next, Outcome, Retry
from mailbridge.steps.base import StepKind, problems_of


class TemplateRef(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)


class SendEmailConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    template: TemplateRef
    variables: dict[str, Any] | None = None
    from_: str | None = Field(default=None, alias="from")
    subject: str | None = None
    reply_to: str | list[str] | None = None


def _domain_of(address: str) -> str:
    return address.rsplit("@", 1)[-1].strip(" >").lower()


class SendEmail(StepKind):
    name: ClassVar[str] = "send_email"
    stored_name: ClassVar[str] = "send"
    config_model = SendEmailConfig

    def check(self, config: object, references: References) -> list[str]:
        problems = problems_of(SendEmailConfig, config)
        if problems:
            return problems
        parsed = SendEmailConfig.model_validate(config)
        template = references.template(parsed.template.id)
        if template is None:
            return [f"config.template.id: template {parsed.template.id!r} is not published"]
        sender = parsed.from_ or template.from_address
        if not sender:
            problems.append("config.from: neither the step nor its template has a `from`")
        elif references.domain and _domain_of(sender) != references.domain.lower():
            problems.append(f"config.from: {sender!r} is not on the domain {references.domain}")
        if not (parsed.subject or template.subject):
            problems.append("config.subject: neither the step nor its template has a subject")
        return problems

    def to_stored(self, config: Mapping[str, Any], references: References) -> dict[str, Any]:
        parsed = SendEmailConfig.model_validate(config)
        template = references.template(parsed.template.id)
        assert template is not None  # checked first
        stored: dict[str, Any] = {
            "from": parsed.from_ or template.from_address,
            "subject": parsed.subject or template.subject,
            "html": template.html,
            "text": template.text,
            "template_id": template.id,
        }
        if parsed.variables is not None:
            stored["variables"] = parsed.variables
        reply_to = parsed.reply_to if parsed.reply_to is not None else template.reply_to
        if reply_to is not None:
            stored["reply_to"] = reply_to
        return stored

    def to_public(self, config: Mapping[str, Any]) -> dict[str, Any]:
        public: dict[str, Any] = {
            "template": {"id": config["template_id"]},
            "from": config.get("from"),
            "subject": config.get("subject"),
        }
        for optional in ("variables", "reply_to"):
            if optional in config:
                public[optional] = config[optional]
        return public

    async def execute(self, execution: Execution) -> Outcome:
        run, config = execution.run, execution.step.config
        contact = await execution.contact()
        if contact is None:
            return Fail("the contact no longer exists")
        if contact.get("unsubscribed"):
            return Next(output={"reason": "unsubscribed"}, skipped=True)
        data = run.data(contact)
        variables = {
            key: resolve_value(value, data)
            for key, value in (config.get("variables") or {}).items()
        }
        try:
            email_id = await execution.tx.mailer.send(self._email(execution, contact, variables))
        except SendRefused as refusal:
            if refusal.skip:
                return Next(output={"reason": refusal.reason}, skipped=True)
            if refusal.retry_at is not None:
                return Retry(refusal.retry_at, refusal.reason)
            return Fail(refusal.reason)
        return Next(output={"email_id": email_id})

    @staticmethod
    def _email(
        execution: Execution, contact: dict[str, Any], variables: dict[str, Any]
    ) -> OutgoingEmail:
        run, config = execution.run, execution.step.config
        return OutgoingEmail(
            key=f"{run.id}:{execution.step.key}",
            team_id=run.team_id,
            automation_id=run.automation_id,
            run_id=run.id,
            domain=execution.automation.domain,
            from_address=str(config["from"]),
            to=str(contact["email"]),
            subject=str(config["subject"]),
            html=config.get("html"),
            text=config.get("text"),
            reply_to=config.get("reply_to"),
            template_id=config.get("template_id"),
            variables=variables,
            contact=contact,
        )
