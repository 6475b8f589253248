"""Inbox steps: what an automation started by an inbox event (``inbox.email.received``,
``inbox.thread.created``) does to that thread — ``add_labels``, ``archive``,
``mark_as_spam``, ``move_to_trash``, ``assign_thread`` (to a member, by email),
``draft_reply`` (a draft from a template, never sent by itself: a member sends it) and
``forward_thread`` (the message that started the run, forwarded from the inbox's
address, with its files, once even if the step is tried again). The thread is the one
the run's trigger event names (``event.thread_id``); a run started otherwise fails the
step, saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from mailbridge.engine.conditions import resolve_value
from mailbridge.engine.execution import Execution
from mailbridge.engine.ports import References
from mailbridge.engine.runs import Fail, Next, Outcome
from mailbridge.mail.templating import render
from mailbridge.steps.base import StepKind


class NoConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")


class AddLabelsConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    labels: list[str] = Field(min_length=1, max_length=10)  # label names of the inbox


class AssignConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    assignee: str = Field(min_length=3, max_length=320)  # a member's email (or id)


class ForwardConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    to: list[str] = Field(min_length=1, max_length=50)  # addresses, checked as POST /emails does
    text: str | None = Field(default=None, max_length=10_000)  # a note above the forwarded message
    attach_original: bool = False  # the received message attached whole (.eml), not inline


class TemplateRef(BaseModel):
    id: str = Field(min_length=1)


class DraftReplyConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    template: TemplateRef
    variables: dict[str, Any] | None = None


class InboxAction(StepKind):
    """A step acting on the run's thread through the ``inboxes`` port."""

    async def options(self, execution: Execution) -> dict[str, Any]:
        return dict(execution.step.config)

    async def execute(self, execution: Execution) -> Outcome:
        run = execution.run
        event = run.context.get("event") or {}
        thread_id = event.get("thread_id") if isinstance(event, Mapping) else None
        if not isinstance(thread_id, str):
            return Fail("the run did not start from an inbox event: there is no thread")
        options = await self.options(execution)
        # The message that started the run (a forward sends it), and a key unique to the
        # run's step, so a step tried again after a crash forwards once.
        options.setdefault("email_id", event.get("email_id"))
        options["key"] = f"{run.id}:{execution.step.key}"
        problem = await execution.tx.inboxes.act(run.team_id, thread_id, self.name, options)
        if problem is not None:
            return Fail(problem)
        return Next(output={"thread_id": thread_id})


class AddLabels(InboxAction):
    name: ClassVar[str] = "add_labels"
    stored_name: ClassVar[str] = "add_labels"
    config_model = AddLabelsConfig


class Archive(InboxAction):
    name: ClassVar[str] = "archive"
    stored_name: ClassVar[str] = "archive"
    config_model = NoConfig


class MarkAsSpam(InboxAction):
    name: ClassVar[str] = "mark_as_spam"
    stored_name: ClassVar[str] = "mark_as_spam"
    config_model = NoConfig


class MoveToTrash(InboxAction):
    name: ClassVar[str] = "move_to_trash"
    stored_name: ClassVar[str] = "move_to_trash"
    config_model = NoConfig


class AssignThread(InboxAction):
    name: ClassVar[str] = "assign_thread"
    stored_name: ClassVar[str] = "assign_thread"
    config_model = AssignConfig


class ForwardThread(InboxAction):
    name: ClassVar[str] = "forward_thread"
    stored_name: ClassVar[str] = "forward_thread"
    config_model = ForwardConfig


class DraftReply(InboxAction):
    """Public ``{template: {id}, variables?}``; stored with the template's subject, html
    and text snapshotted (as ``send_email`` does); rendered for the run's contact. The
    draft's subject is the reply's ("Re: " and the thread's), not the template's."""

    name: ClassVar[str] = "draft_reply"
    stored_name: ClassVar[str] = "draft_reply"
    config_model = DraftReplyConfig

    def check(self, config: object, references: References) -> list[str]:
        problems = super().check(config, references)
        if not problems:
            template_id = DraftReplyConfig.model_validate(config).template.id
            if references.template(template_id) is None:
                problems.append(f"config.template.id: template {template_id!r} is not published")
        return problems

    def to_stored(self, config: Mapping[str, Any], references: References) -> dict[str, Any]:
        parsed = DraftReplyConfig.model_validate(config)
        template = references.template(parsed.template.id)
        assert template is not None  # checked first
        stored: dict[str, Any] = {
            "template_id": template.id, "subject": template.subject, "html": template.html,
            "text": template.text,
        }  # fmt: skip
        if parsed.variables is not None:
            stored["variables"] = parsed.variables
        return stored

    def to_public(self, config: Mapping[str, Any]) -> dict[str, Any]:
        public: dict[str, Any] = {"template": {"id": config["template_id"]}}
        if "variables" in config:
            public["variables"] = config["variables"]
        return public

    async def options(self, execution: Execution) -> dict[str, Any]:
        config = execution.step.config
        contact = await execution.contact()
        data = execution.run.data(contact)
        variables = {
            key: resolve_value(value, data)
            for key, value in (config.get("variables") or {}).items()
        }
        # No subject: a reply keeps the thread's ("Re: ..."), which mail clients thread by.
        return {
            "subject": None,
            "html": render(config.get("html"), variables, contact=contact, html=True) or None,
            "text": render(config.get("text"), variables, contact=contact) or None,
        }


INBOX_ACTIONS: tuple[StepKind, ...] = (
    AddLabels(), Archive(), MarkAsSpam(), MoveToTrash(), AssignThread(), DraftReply(),
    ForwardThread(),
)  # fmt: skip
