"""The ``inboxes`` command group: inboxes, their threads and messages, labels, drafts,
replies and the agent settings (the table ``_operations`` reads; one line an operation).
An inbox is named by its id or its address wherever a command takes ``INBOX_REF``."""

from __future__ import annotations

from mailbridge.cli.client._operations_base import PAGE, Field, Op, _g

THREAD_FILTERS = (*PAGE, "folders", "labels", "read")
SEARCH = (*THREAD_FILTERS, "query", "from", "to", "cc", "bcc", "has_attachment", "start_date",
          "end_date")  # fmt: skip
THREAD = "/inboxes/{inbox_ref}/threads/{thread_id}"
DRAFT_FIELDS = {
    "to": Field("to", many=True), "cc": Field("cc", many=True), "bcc": Field("bcc", many=True),
    "subject": Field("subject"), "text": Field("text"), "html": Field("html"),
}  # fmt: skip

# fmt: off
INBOXES: tuple[str, list[Op]] = ('Inboxes: threads of what an address receives and sends.', [
    _g('create', 'POST', '/inboxes', 'Create an inbox on a receiving domain.', body=True,
        fields={'email-address': Field('email_address'), 'name': Field('name'),
                'from-name': Field('from_name')}),
    _g('list', 'GET', '/inboxes', 'List inboxes.', query=PAGE),
    _g('get', 'GET', '/inboxes/{inbox_ref}', 'One inbox (by id or address).'),
    _g('update', 'PATCH', '/inboxes/{inbox_ref}', 'Change an inbox.', body=True,
        fields={'name': Field('name'), 'from-name': Field('from_name')}),
    _g('delete', 'DELETE', '/inboxes/{inbox_ref}', 'Delete an inbox (its received mail stays).',
        destructive=True),
    _g('threads', 'GET', '/inboxes/{inbox_ref}/threads', "An inbox's threads, newest first.",
        query=THREAD_FILTERS),
    _g('search', 'GET', '/inboxes/{inbox_ref}/threads/search',
        'Threads whose messages hold these words and addresses.', query=SEARCH),
    _g('thread', 'GET', THREAD, 'One thread.'),
    _g('update-thread', 'PATCH', THREAD, 'Mark a thread read, move it, or assign it.',
        body=True, fields={'folder': Field('folder', flag_help='inbox, archive, spam or trash'),
                           'assignee': Field('assignee_id', flag_help="a member's email")}),
    _g('delete-thread', 'DELETE', THREAD, 'Move a thread to the trash (from the trash: delete).',
        destructive=True),
    _g('messages', 'GET', f'{THREAD}/emails', "A thread's messages.", query=PAGE),
    _g('message', 'GET', f'{THREAD}/emails/{{email_id}}', 'One message of a thread.'),
    _g('reply', 'POST', f'{THREAD}/emails/{{email_id}}/reply',
        "Reply from the inbox's address.", body=True, idempotent=True,
        fields={'text': Field('text'), 'html': Field('html'), 'cc': Field('cc', many=True)}),
    _g('forward', 'POST', f'{THREAD}/emails/{{email_id}}/forward',
        "Forward a message from the inbox's address (its files too).", body=True,
        idempotent=True, fields={'to': Field('to', many=True), 'text': Field('text')}),
    _g('add-labels', 'POST', f'{THREAD}/labels', 'Put labels on a thread.', body=True,
        fields={'label': Field('labels', many=True, flag_help='a label id (repeat for more)')}),
    _g('set-labels', 'PUT', f'{THREAD}/labels', "Replace a thread's labels.", body=True,
        fields={'label': Field('labels', many=True, flag_help='a label id (repeat for more)')}),
    _g('remove-label', 'DELETE', f'{THREAD}/labels/{{label_id}}', 'Take a label off a thread.',
        destructive=True),
    _g('labels', 'GET', '/inboxes/{inbox_ref}/labels', "An inbox's labels."),
    _g('create-label', 'POST', '/inboxes/{inbox_ref}/labels', 'Create a label.', body=True,
        fields={'name': Field('name'), 'color': Field('color', flag_help='#RRGGBB')}),
    _g('update-label', 'PATCH', '/inboxes/{inbox_ref}/labels/{label_id}', 'Change a label.',
        body=True, fields={'name': Field('name'), 'color': Field('color')}),
    _g('delete-label', 'DELETE', '/inboxes/{inbox_ref}/labels/{label_id}', 'Delete a label.',
        destructive=True),
    _g('drafts', 'GET', '/inboxes/{inbox_ref}/drafts', "An inbox's unsent drafts.", query=PAGE),
    _g('create-draft', 'POST', '/inboxes/{inbox_ref}/drafts', 'Write a draft.', body=True,
        idempotent=True, fields=DRAFT_FIELDS),
    _g('draft', 'GET', '/inboxes/{inbox_ref}/drafts/{draft_id}', 'One draft.'),
    _g('update-draft', 'PATCH', '/inboxes/{inbox_ref}/drafts/{draft_id}', 'Change a draft.',
        body=True, fields=DRAFT_FIELDS),
    _g('delete-draft', 'DELETE', '/inboxes/{inbox_ref}/drafts/{draft_id}', 'Delete a draft.',
        destructive=True),
    _g('send-draft', 'POST', '/inboxes/{inbox_ref}/drafts/{draft_id}/send',
        "Send a draft from the inbox's address.", body=True, idempotent=True),
    _g('agent', 'GET', '/inboxes/{inbox_ref}/agent', "The inbox agent's settings."),
    _g('update-agent', 'PATCH', '/inboxes/{inbox_ref}/agent', "Change the agent's settings.",
        body=True, fields={'instructions': Field('instructions'), 'tone': Field('tone'),
                           'action': Field('actions', many=True)}),
])
# fmt: on
