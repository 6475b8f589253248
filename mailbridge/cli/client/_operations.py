"""Every API operation the CLI offers, one line each: its command group and name, the
route it calls, and how its command reads (path parameters are arguments in order;
``query`` names become options; a body comes from ``--file``/``-`` and ``--set``, and
from the dedicated flags of ``fields``). tests hold this table to the OpenAPI document:
a route without a command fails them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PAGE = ("limit", "after", "before")
CONTACT_FILTERS = (
    "audience_id", "email", "email_contains", "unsubscribed", "created_after", "created_before",
)  # fmt: skip


@dataclass(frozen=True)
class Field:
    """A body field with a flag of its own: ``--to a@x --to b@x`` → ``"to": [...]``."""

    key: str
    many: bool = False
    flag_help: str = ""


@dataclass(frozen=True)
class Op:
    group: str
    name: str
    method: str
    path: str
    help: str
    query: tuple[str, ...] = ()
    body: bool = False
    fields: dict[str, Field] = field(default_factory=dict)
    fixed_body: dict[str, object] | None = None  # sent as is (enable, disable)
    destructive: bool = False  # asks, or needs --yes off a terminal
    idempotent: bool = False  # takes --idempotency-key
    example: str = ""

    @property
    def lists(self) -> bool:
        return self.method == "GET" and "after" in self.query

    @property
    def arguments(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def command(self) -> str:
        return f"{self.group} {self.name}".strip()


def _g(name: str, method: str, path: str, help: str, **more: object) -> Op:
    return Op("", name, method, path, help, **more)  # type: ignore[arg-type]


EMAIL_FIELDS = {
    "from": Field("from", flag_help="sender, e.g. 'Shop <hi@shop.io>'"),
    "to": Field("to", many=True, flag_help="recipient (repeat for more)"),
    "subject": Field("subject"),
    "html": Field("html"),
    "text": Field("text"),
    "cc": Field("cc", many=True),
    "bcc": Field("bcc", many=True),
    "reply-to": Field("reply_to", many=True),
    "scheduled-at": Field("scheduled_at", flag_help="ISO 8601 or 'in 1 hour'"),
}
NAMED = {"name": Field("name")}
CONTACT_FIELDS = {
    "email": Field("email"),
    "first-name": Field("first_name"),
    "last-name": Field("last_name"),
}

# fmt: off
GROUPS: dict[str, tuple[str, list[Op]]] = {
    'emails': ('Send and read emails.', [
        _g('send', 'POST', '/emails', 'Send an email.', body=True, fields=EMAIL_FIELDS,
            idempotent=True,
            example="mailbridge emails send --from 'Shop <hi@shop.io>' --to ann@x.io "
                        "--subject Hi --text 'Hello'"),
        _g('batch', 'POST', '/emails/batch', 'Send up to 100 emails (a JSON array body).',
            body=True, idempotent=True,
            example='mailbridge emails batch --file emails.json'),
        _g('list', 'GET', '/emails', 'List sent emails.',
            query=(*PAGE, 'status', 'recipient', 'created_after', 'created_before', 'tag')),
        _g('get', 'GET', '/emails/{email_id}', 'One email and its events.'),
        _g('update', 'PATCH', '/emails/{email_id}', 'Reschedule a scheduled email.', body=True,
            fields={'scheduled-at': Field('scheduled_at')}),
        _g('cancel', 'POST', '/emails/{email_id}/cancel', 'Cancel a scheduled email.',
            destructive=True),
        _g('attachments', 'GET', '/emails/{email_id}/attachments', "An email's attachments."),
        _g('attachment', 'GET', '/emails/{email_id}/attachments/{attachment_id}',
            'One attachment of an email.'),
        _g('share', 'POST', '/emails/{email_id}/share',
            'A public link to the email (sent or received), for at most 48 hours.', body=True,
            fields={'expires-in': Field('expires_in', flag_help="e.g. 2h, 1 day (default 48h)")},
            example='mailbridge emails share <id> --expires-in 2h'),
        _g('unshare', 'DELETE', '/emails/{email_id}/share', "End every link to the email.",
            destructive=True),
        _g('metrics', 'GET', '/emails/metrics', 'Counts and rates over a range.',
            query=('start_date', 'end_date', 'timezone', 'granularity', 'metrics',
                   'dimensions', 'domain_id', 'email_id', 'broadcast_id'),
            example='mailbridge emails metrics --dimensions period --granularity daily'),
    ]),
    'domains': ('Sending (and receiving) domains.', [
        _g('create', 'POST', '/domains', 'Add a domain; its records say what to publish.',
            body=True, fields={**NAMED, 'region': Field('region')},
            example='mailbridge domains create --name mail.shop.io'),
        _g('list', 'GET', '/domains', 'List domains.', query=PAGE),
        _g('get', 'GET', '/domains/{domain_id}', 'One domain and its DNS records.'),
        _g('update', 'PATCH', '/domains/{domain_id}', "Change a domain's settings.", body=True),
        _g('delete', 'DELETE', '/domains/{domain_id}', 'Remove a domain.', destructive=True),
        _g('verify', 'POST', '/domains/{domain_id}/verify', 'Check its DNS records now.'),
        _g('claim', 'POST', '/domains/claim', 'Claim a domain another team verified.', body=True,
            fields=NAMED),
        _g('claim-status', 'GET', '/domains/{domain_id}/claim', "A claim's challenge."),
        _g('claim-verify', 'POST', '/domains/{domain_id}/claim/verify',
            "Check a claim's challenge record."),
    ]),
    'audiences': ('Audiences (lists of contacts).', [
        _g('create', 'POST', '/audiences', 'Create an audience.', body=True, fields=NAMED),
        _g('list', 'GET', '/audiences', 'List audiences.', query=PAGE),
        _g('get', 'GET', '/audiences/{audience_id}', 'One audience.'),
        _g('delete', 'DELETE', '/audiences/{audience_id}', 'Delete an audience.',
            destructive=True),
        _g('contacts', 'GET', '/audiences/{audience_id}/contacts', "An audience's contacts.",
            query=(*PAGE, *CONTACT_FILTERS[1:])),
        _g('add-contact', 'POST', '/audiences/{audience_id}/contacts',
            'Add a contact to an audience.', body=True, fields=CONTACT_FIELDS),
        _g('get-contact', 'GET', '/audiences/{audience_id}/contacts/{id_or_email}',
            'One contact of an audience.'),
        _g('update-contact', 'PATCH', '/audiences/{audience_id}/contacts/{id_or_email}',
            'Change a contact of an audience.', body=True, fields=CONTACT_FIELDS),
        _g('remove-contact', 'DELETE', '/audiences/{audience_id}/contacts/{id_or_email}',
            'Remove a contact from an audience.', destructive=True),
    ]),
    'contacts': ('Contacts.', [
        _g('create', 'POST', '/contacts', 'Create a contact.', query=('audience_id',), body=True,
            fields=CONTACT_FIELDS,
            example='mailbridge contacts create --email ann@x.io --first-name Ann'),
        _g('list', 'GET', '/contacts', 'List contacts.', query=(*PAGE, *CONTACT_FILTERS)),
        _g('batch', 'POST', '/contacts/batch', 'Create or update up to 100 contacts.',
            query=('audience_id',), body=True),
        _g('imports', 'GET', '/contacts/imports', 'List CSV imports (see contacts import).',
            query=(*PAGE, 'status')),
        _g('import-status', 'GET', '/contacts/imports/{import_id}',
            'One CSV import: its progress and the rows that failed.'),
        _g('get', 'GET', '/contacts/{id_or_email}', 'One contact.', query=('audience_id',)),
        _g('update', 'PATCH', '/contacts/{id_or_email}', 'Change a contact.',
            query=('audience_id',), body=True, fields=CONTACT_FIELDS),
        _g('delete', 'DELETE', '/contacts/{id_or_email}', 'Delete a contact.',
            query=('audience_id',), destructive=True),
        _g('segments', 'GET', '/contacts/{contact_ref}/segments', "A contact's segments.",
            query=PAGE),
        _g('add-to-segment', 'POST', '/contacts/{contact_ref}/segments/{segment_id}',
            'Add a contact to a segment.'),
        _g('remove-from-segment', 'DELETE', '/contacts/{contact_ref}/segments/{segment_id}',
            'Take a contact out of a segment.', destructive=True),
        _g('topics', 'GET', '/contacts/{id_or_email}/topics', "A contact's topic choices.",
            query=('audience_id', *PAGE)),
        _g('update-topics', 'PATCH', '/contacts/{id_or_email}/topics',
            'Opt a contact in or out of topics.', query=('audience_id',), body=True),
    ]),
    'contact-properties': ('Custom contact properties.', [
        _g('create', 'POST', '/contact-properties', 'Define a property.', body=True,
            fields={'key': Field('key'), 'type': Field('type'),
            'fallback-value': Field('fallback_value')}),
        _g('list', 'GET', '/contact-properties', 'List properties.', query=PAGE),
        _g('get', 'GET', '/contact-properties/{property_id}', 'One property.'),
        _g('update', 'PATCH', '/contact-properties/{property_id}', 'Change a property.',
            body=True),
        _g('delete', 'DELETE', '/contact-properties/{property_id}', 'Delete a property.',
            destructive=True),
    ]),
    'segments': ('Segments (filters over contacts).', [
        _g('create', 'POST', '/segments', 'Create a segment.', body=True, fields=NAMED),
        _g('list', 'GET', '/segments', 'List segments.', query=PAGE),
        _g('get', 'GET', '/segments/{segment_id}', 'One segment.'),
        _g('update', 'PATCH', '/segments/{segment_id}', 'Change a segment.', body=True,
            fields=NAMED),
        _g('delete', 'DELETE', '/segments/{segment_id}', 'Delete a segment.', destructive=True),
        _g('members', 'GET', '/segments/{segment_id}/contacts', "A segment's contacts.",
            query=PAGE),
        _g('add-member', 'POST', '/segments/{segment_id}/contacts/{contact_ref}',
            'Add a contact to a segment.'),
        _g('remove-member', 'DELETE', '/segments/{segment_id}/contacts/{contact_ref}',
            'Take a contact out of a segment.', destructive=True),
    ]),
    'topics': ('Topics contacts opt in to or out of.', [
        _g('create', 'POST', '/topics', 'Create a topic.', body=True, fields={**NAMED,
            'default-subscription': Field('default_subscription')}),
        _g('list', 'GET', '/topics', 'List topics.', query=PAGE),
        _g('get', 'GET', '/topics/{topic_id}', 'One topic.'),
        _g('update', 'PATCH', '/topics/{topic_id}', 'Change a topic.', body=True, fields=NAMED),
        _g('delete', 'DELETE', '/topics/{topic_id}', 'Delete a topic.', destructive=True),
    ]),
    'templates': ('Email templates.', [
        _g('create', 'POST', '/templates', 'Create a template.', body=True, fields={**NAMED,
            'alias': Field('alias'), 'subject': Field('subject'), 'html': Field('html'),
            'text': Field('text'), 'from': Field('from')}),
        _g('list', 'GET', '/templates', 'List templates.', query=PAGE),
        _g('get', 'GET', '/templates/{id_or_alias}', 'One template.'),
        _g('update', 'PATCH', '/templates/{id_or_alias}', "Change a template's draft.",
            body=True),
        _g('delete', 'DELETE', '/templates/{id_or_alias}', 'Delete a template.',
            destructive=True),
        _g('publish', 'POST', '/templates/{id_or_alias}/publish', 'Publish the draft.'),
        _g('duplicate', 'POST', '/templates/{id_or_alias}/duplicate', 'Copy a template.'),
    ]),
    'polls': ('Polls embedded in mail as {{{poll:ID}}}, and their votes.', [
        _g('create', 'POST', '/polls', 'Create a poll.', body=True,
            fields={'question': Field('question'),
            'option': Field('options', many=True, flag_help='an option (repeat: 2 to 10)')},
            example="mailbridge polls create --question 'Which day?' --option Monday "
                    "--option Friday"),
        _g('list', 'GET', '/polls', 'List polls.', query=PAGE),
        _g('get', 'GET', '/polls/{poll_id}', 'One poll and its counts per option.'),
        _g('votes', 'GET', '/polls/{poll_id}/votes', "A poll's votes.", query=PAGE,
            example='mailbridge polls votes poll_123 --all'),
        _g('update', 'PATCH', '/polls/{poll_id}', 'Close, reopen or change a poll.', body=True,
            example='mailbridge polls update poll_123 --set closed=true'),
        _g('delete', 'DELETE', '/polls/{poll_id}', 'Delete a poll and its votes.',
            destructive=True),
    ]),
    'automations': ('Automations: a trigger, steps and their connections.', [
        _g('create', 'POST', '/automations', 'Create an automation (usually --file).', body=True,
            example='mailbridge automations create --file welcome.json'),
        _g('list', 'GET', '/automations', 'List automations.', query=('status', *PAGE)),
        _g('get', 'GET', '/automations/{automation_id}', 'One automation and its graph.'),
        _g('update', 'PATCH', '/automations/{automation_id}', 'Change an automation.', body=True),
        _g('enable', 'PATCH', '/automations/{automation_id}', 'Start enrolling contacts.',
            fixed_body={'status': 'enabled'}),
        _g('disable', 'PATCH', '/automations/{automation_id}', 'Stop enrolling contacts.',
            fixed_body={'status': 'disabled'}),
        _g('delete', 'DELETE', '/automations/{automation_id}', 'Delete an automation.',
            destructive=True),
        _g('stop', 'POST', '/automations/{automation_id}/stop',
            'Stop an automation and its runs.', destructive=True),
        _g('duplicate', 'POST', '/automations/{automation_id}/duplicate', 'Copy one.'),
        _g('add-step', 'POST', '/automations/{automation_id}/steps', 'Add a step.', body=True),
        _g('step', 'GET', '/automations/{automation_id}/steps/{step_id}', 'One step.'),
        _g('update-step', 'PATCH', '/automations/{automation_id}/steps/{step_id}',
            'Change a step.', body=True),
        _g('delete-step', 'DELETE', '/automations/{automation_id}/steps/{step_id}',
            'Delete a step.', destructive=True),
        _g('runs', 'GET', '/automations/{automation_id}/runs', "An automation's runs.",
            query=('status', *PAGE),
            example='mailbridge automations runs aut_123 --status running --all'),
        _g('run', 'GET', '/automations/{automation_id}/runs/{run_id}',
            'One run and its path through the graph.'),
    ]),
    'campaigns': ('Campaigns: scheduled, recurring, A/B.', [
        _g('create', 'POST', '/campaigns', 'Create a campaign (draft).', body=True,
            fields={**NAMED, 'audience-id': Field('audience_id'), 'from': Field('from'),
            'subject': Field('subject'), 'html': Field('html'), 'text': Field('text')}),
        _g('list', 'GET', '/campaigns', 'List campaigns.', query=('parent_id', 'status', *PAGE)),
        _g('get', 'GET', '/campaigns/{campaign_id}', 'One campaign and its counts.'),
        _g('update', 'PATCH', '/campaigns/{campaign_id}', 'Change a draft.', body=True),
        _g('delete', 'DELETE', '/campaigns/{campaign_id}', 'Delete a draft or finished one.',
            destructive=True),
        _g('send', 'POST', '/campaigns/{campaign_id}/send', 'Send now or schedule it.', body=True,
            fields={'scheduled-at': Field('scheduled_at'),
            'schedule-timezone': Field('schedule_timezone')}, idempotent=True),
        _g('cancel', 'POST', '/campaigns/{campaign_id}/cancel', 'Cancel a scheduled one.',
            destructive=True),
        _g('ab', 'GET', '/campaigns/{campaign_id}/ab', "An A/B test's results."),
        _g('duplicate', 'POST', '/campaigns/{campaign_id}/duplicate',
            'A new draft with the same content and recipients.'),
    ]),
    'broadcasts': ("Broadcasts (Resend's name for campaigns).", [
        _g('create', 'POST', '/broadcasts', 'Create a broadcast.', body=True),
        _g('list', 'GET', '/broadcasts', 'List broadcasts.', query=PAGE),
        _g('get', 'GET', '/broadcasts/{broadcast_id}', 'One broadcast.'),
        _g('update', 'PATCH', '/broadcasts/{broadcast_id}', 'Change a draft.', body=True),
        _g('delete', 'DELETE', '/broadcasts/{broadcast_id}', 'Delete a broadcast.',
            destructive=True),
        _g('send', 'POST', '/broadcasts/{broadcast_id}/send', 'Send or schedule it.', body=True,
            fields={'scheduled-at': Field('scheduled_at')}, idempotent=True),
        _g('cancel', 'POST', '/broadcasts/{broadcast_id}/cancel', 'Cancel a scheduled one.',
            destructive=True),
        _g('duplicate', 'POST', '/broadcasts/{broadcast_id}/duplicate',
            'A new draft with the same content and recipients.'),
        _g('recipients', 'GET', '/broadcasts/{broadcast_id}/recipients',
            'Recipients that reached an event (--type).',
            query=('type', 'email', 'bounce_type', *PAGE)),
        _g('clicked-links', 'GET', '/broadcasts/{broadcast_id}/clicked-links',
            'Links clicked, most first.', query=PAGE),
    ]),
    'events': ('Event definitions, and sending events.', [
        _g('create', 'POST', '/events', 'Define an event.', body=True, fields=NAMED),
        _g('list', 'GET', '/events', 'List event definitions.', query=PAGE),
        _g('get', 'GET', '/events/{id_or_name}', 'One event definition.'),
        _g('update', 'PATCH', '/events/{id_or_name}', 'Change a definition.', body=True),
        _g('delete', 'DELETE', '/events/{id_or_name}', 'Delete a definition.', destructive=True),
        _g('send', 'POST', '/events/send', 'Send an event about a contact.', body=True,
            fields={'event': Field('event'), 'email': Field('email'),
            'contact-id': Field('contact_id')}, idempotent=True,
            example='mailbridge events send --event signed_up --email ann@x.io --set '
                        'data.plan=pro'),
    ]),
    'receiving': ('Received mail.', [
        _g('list', 'GET', '/emails/receiving', 'List received emails.', query=PAGE),
        _g('get', 'GET', '/emails/receiving/{received_id}', 'One received email.'),
        _g('attachments', 'GET', '/emails/receiving/{received_id}/attachments',
            "A received email's attachments.", query=(*PAGE, 'content')),
        _g('attachment', 'GET', '/emails/receiving/{received_id}/attachments/{attachment_id}',
            'One attachment of a received email.', query=('content',)),
    ]),
    'suppressions': ('Addresses mail is not sent to.', [
        _g('list', 'GET', '/suppressions', 'List suppressions.', query=('origin', *PAGE)),
        _g('add', 'POST', '/suppressions', 'Suppress an address.', body=True,
            fields={'email': Field('email'), 'reason': Field('reason')}),
        _g('add-batch', 'POST', '/suppressions/batch/add', 'Suppress many.', body=True),
        _g('remove-batch', 'POST', '/suppressions/batch/remove', 'Lift many.', body=True,
            destructive=True),
        _g('get', 'GET', '/suppressions/{id_or_email}', 'One suppression.'),
        _g('delete', 'DELETE', '/suppressions/{id_or_email}', 'Lift a suppression.',
            destructive=True),
    ]),
    'webhooks': ('Signed webhooks.', [
        _g('create', 'POST', '/webhooks', 'Subscribe an endpoint.', body=True,
            fields={'endpoint': Field('endpoint'), 'events': Field('events', many=True)}),
        _g('list', 'GET', '/webhooks', 'List webhooks.', query=PAGE),
        _g('get', 'GET', '/webhooks/{webhook_id}', 'One webhook.'),
        _g('update', 'PATCH', '/webhooks/{webhook_id}', 'Change a webhook.', body=True),
        _g('delete', 'DELETE', '/webhooks/{webhook_id}', 'Delete a webhook.', destructive=True),
        _g('deliveries', 'GET', '/webhooks/{webhook_id}/deliveries', "A webhook's deliveries.",
            query=('status', *PAGE)),
        _g('delivery', 'GET', '/webhooks/{webhook_id}/deliveries/{delivery_id}',
            'One delivery and its attempts.'),
        _g('replay', 'POST', '/webhooks/{webhook_id}/deliveries/{delivery_id}/replay',
            'Deliver again.'),
        _g('events', 'GET', '/webhooks/{webhook_id}/events',
            "A webhook's events and how each stands.", query=PAGE),
        _g('event', 'GET', '/webhooks/{webhook_id}/events/{event_id}', 'One event.'),
        _g('event-attempts', 'GET', '/webhooks/{webhook_id}/events/{event_id}/attempts',
            "An event's delivery attempts, newest first.", query=PAGE),
        _g('replay-event', 'POST', '/webhooks/{webhook_id}/events/{event_id}/replay',
            'Deliver an event again.'),
        _g('rotate-secret', 'POST', '/webhooks/{webhook_id}/signing-secret/rotate',
            'A new signing secret (shown once); the old one signs too for 24 hours.'),
    ]),
    'usage': ("The team's use of its plan.", [
        _g('get', 'GET', '/usage', 'Emails, runs and domains used, and the caps.'),
    ]),
    'api-keys': ('API keys.', [
        _g('list', 'GET', '/api-keys', 'List keys (never their secrets).', query=PAGE),
        _g('create', 'POST', '/api-keys', 'Create a key.', body=True, fields={**NAMED,
            'permission': Field('permission')}),
        _g('update', 'PATCH', '/api-keys/{key_id}', 'Rename or re-scope a key.', body=True,
            fields={**NAMED, 'permission': Field('permission'), 'domain': Field('domain')}),
        _g('delete', 'DELETE', '/api-keys/{key_id}', 'Revoke a key.', destructive=True),
    ]),
    'members': ('Team members (a member session, not an API key: the dashboard\'s).', [
        _g('list', 'GET', '/members', 'List members.', query=PAGE),
        _g('update', 'PATCH', '/members/{member_id}', 'Give a member another role.', body=True,
            fields={'role': Field('role', flag_help='owner, admin or view_only')}),
        _g('remove', 'DELETE', '/members/{member_id}', 'Remove a member (their sessions end).',
            destructive=True),
        _g('invite', 'POST', '/members/invitations', 'Invite an address (a one-time link).',
            body=True, fields={'email': Field('email'),
                               'role': Field('role', flag_help='owner, admin or view_only')}),
        _g('invitations', 'GET', '/members/invitations', 'Pending invitations.'),
        _g('withdraw', 'DELETE', '/members/invitations/{invitation_id}',
            'Withdraw an invitation.', destructive=True),
        _g('sessions', 'GET', '/members/{member_id}/sessions',
            "A member's open sessions (one's own, or a managed member's)."),
        _g('revoke-session', 'DELETE', '/members/sessions/{session_id}',
            'End a session (it signs out at once).', destructive=True),
        _g('change-password', 'POST', '/members/me/password',
            'Change your password (every other session of yours ends).', body=True,
            fields={'current_password': Field('current_password'),
                    'password': Field('password')}),
        _g('audit', 'GET', '/members/audit',
            'Who changed members, roles, invitations and sessions (owners).', query=PAGE),
    ]),
    'logs': ("The API's request log.", [
        _g('list', 'GET', '/logs', 'List requests.', query=PAGE),
        _g('get', 'GET', '/logs/{log_id}', 'One request.'),
    ]),
}
# fmt: on

HEALTH = Op("", "health", "GET", "/health", "Whether the API answers, and its version.")
READY = Op("", "ready", "GET", "/ready", "Whether the database answers, its schema at head.")


def operations() -> list[Op]:
    found = [
        Op(group, op.name, op.method, op.path, op.help, op.query, op.body, op.fields,
           op.fixed_body, op.destructive, op.idempotent, op.example)
        for group, (_help, ops) in GROUPS.items()
        for op in ops
    ]  # fmt: skip
    return [*found, HEALTH, READY]
