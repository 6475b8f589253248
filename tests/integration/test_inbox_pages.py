"""The dashboard's inbox over real received mail: the inboxes, a folder's threads (unread
marked, labels shown), a thread with its messages (HTML only in a sandboxed frame), the
automation's draft sent with a button, a reply from the form, a move to the archive —
every write through the API as the signed-in member, with the form's CSRF token."""

# ruff: noqa: F811  (the ``inbox`` fixture is test_inbound's, taken as a parameter)

from __future__ import annotations

import re

from mailbridge.services.accounts import Role
from mailbridge.storage.tables import InboxAgentCall
from tests.integration.test_dashboard import add_member, csrf_of, sign_in
from tests.integration.test_inbound import Inbox, dns, inbox  # noqa: F401
from tests.integration.test_inboxes import SUPPORT, filed, support_inbox, threads, write


async def test_a_member_works_a_thread_in_the_dashboard(inbox: Inbox) -> None:
    await support_inbox(inbox)
    await write(inbox, "Broken <b>zipper</b>", Message_ID="<z1@corp.io>")
    [thread] = await threads(inbox)
    draft = await inbox.client.post(
        f"/inboxes/{SUPPORT}/drafts",
        json={"thread_id": thread["id"], "reply_to_email_id": (
            await inbox.client.get(f"/inboxes/{SUPPORT}/threads/{thread['id']}/emails")
        ).json()["data"][0]["id"], "text": "A new zipper is on its way."},
    )  # fmt: skip
    assert draft.status_code == 201, draft.text
    email = await add_member(inbox.context, inbox.tenant, Role.ADMIN)
    client = inbox.client
    await sign_in(client, email)

    listed = await client.get("/dashboard/inboxes")
    assert listed.status_code == 200 and SUPPORT in listed.text
    folder = await client.get(f"/dashboard/inboxes/{SUPPORT}")
    assert folder.status_code == 200 and "badge-unread" in folder.text
    assert "Broken &lt;b&gt;zipper&lt;/b&gt;" in folder.text  # escaped, never markup
    href = f"/dashboard/inboxes/{SUPPORT}/threads/{thread['id']}"
    assert href in folder.text

    page = await client.get(href)
    assert page.status_code == 200
    assert '<iframe class="preview" sandbox srcdoc=' in page.text
    assert "<p>HTML words</p>" not in page.text  # the HTML is inside srcdoc, escaped
    assert "Send this draft" in page.text and "Send reply" in page.text
    read = (await client.get(f"/inboxes/{SUPPORT}/threads/{thread['id']}")).json()
    assert read["read"] is True  # opened in the dashboard
    token = csrf_of(page)

    refused = await client.post(f"{href}/reply", data={"text": "x", "email_id": "nope"})
    assert refused.status_code == 403  # no CSRF token
    draft_id = draft.json()["id"]
    sent = await client.post(
        f"/dashboard/inboxes/{SUPPORT}/drafts/{draft_id}/send",
        data={"csrf": token, "thread_id": thread["id"]},
    )
    assert sent.status_code == 303 and "Draft+sent" in sent.headers["location"]
    assert (await client.get(f"/inboxes/{SUPPORT}/drafts/{draft_id}")).json()["email_id"]
    email_id = re.search(r'name="email_id" value="([^"]+)"', page.text)
    assert email_id is not None
    replied = await client.post(
        f"{href}/reply", data={"csrf": token, "email_id": email_id.group(1), "text": "Also: sorry!"}
    )
    assert replied.status_code == 303, replied.text[:500]
    moved = await client.post(f"{href}/move", data={"csrf": token, "folder": "archive"})
    assert moved.status_code == 303
    assert [each["id"] for each in await threads(inbox, "?folders=archive")] == [thread["id"]]
    await filed(inbox)


async def test_forward_assign_drafts_and_what_the_agent_did(inbox: Inbox) -> None:
    inbox_id = await support_inbox(inbox)
    await write(inbox, "Refund please")
    [thread] = await threads(inbox)
    standalone = await inbox.client.post(
        f"/inboxes/{SUPPORT}/drafts", json={"to": ["bo@corp.io"], "subject": "Our news"}
    )
    assert standalone.status_code == 201, standalone.text
    async with inbox.context.database.session() as session:
        session.add(
            InboxAgentCall(
                team_id=inbox.tenant.team_id, inbox_id=inbox_id, thread_id=thread["id"],
                email_id=thread["id"], status="done", attempts=1,
                due_at=inbox.context.clock.now(), created_at=inbox.context.clock.now(),
                updated_at=inbox.context.clock.now(),
                outcome={"applied": ["add_labels"], "refused": [
                    {"type": "archive", "reason": "archive is not among the allowed <actions>"}
                ]},
            )
        )  # fmt: skip
        await session.commit()
    email = await add_member(inbox.context, inbox.tenant, Role.ADMIN)
    client = inbox.client
    await sign_in(client, email)
    href = f"/dashboard/inboxes/{SUPPORT}/threads/{thread['id']}"
    page = await client.get(href)
    assert "did add_labels" in page.text
    assert "refused archive: archive is not among the allowed &lt;actions&gt;" in page.text
    token = csrf_of(page)
    email_id = re.search(r'name="email_id" value="([^"]+)"', page.text)
    assert email_id is not None

    forwarded = await client.post(
        f"{href}/forward",
        data={"csrf": token, "email_id": email_id.group(1), "to": "billing@shop.io, ann@corp.io",
              "text": "Please refund."},
    )  # fmt: skip
    assert forwarded.status_code == 303 and "Forward+queued" in forwarded.headers["location"]
    sent = (await inbox.client.get("/emails")).json()["data"]
    assert [item["to"] for item in sent] == [["billing@shop.io", "ann@corp.io"]]
    assert sent[0]["subject"] == "Fwd: Refund please"
    refused = await client.post(
        f"{href}/forward", data={"csrf": token, "email_id": email_id.group(1), "to": ""}
    )
    assert refused.status_code == 422 and "forward needs" in refused.text

    assigned = await client.post(f"{href}/assign", data={"csrf": token, "assignee": email})
    assert assigned.status_code == 303 and "Assigned" in assigned.headers["location"]
    page = await client.get(href)
    assert f'name="assignee" value="{email}"' in page.text
    unassigned = await client.post(f"{href}/assign", data={"csrf": token, "assignee": ""})
    assert unassigned.status_code == 303
    assert (await inbox.client.get(f"/inboxes/{SUPPORT}/threads/{thread['id']}")).json()[
        "assignee_id"
    ] is None

    folder = await client.get(f"/dashboard/inboxes/{SUPPORT}")
    assert f'href="/dashboard/inboxes/{SUPPORT}/drafts"' in folder.text
    drafts = await client.get(f"/dashboard/inboxes/{SUPPORT}/drafts")
    assert drafts.status_code == 200 and "Our news" in drafts.text and "bo@corp.io" in drafts.text
    draft_id = standalone.json()["id"]
    sent_draft = await client.post(
        f"/dashboard/inboxes/{SUPPORT}/drafts/{draft_id}/send",
        data={"csrf": csrf_of(drafts), "thread_id": ""},
    )
    # A draft with no body is refused by the API, shown on a page, never a 500.
    assert sent_draft.status_code == 422, sent_draft.text[:300]
    await inbox.client.patch(f"/inboxes/{SUPPORT}/drafts/{draft_id}", json={"text": "News!"})
    sent_draft = await client.post(
        f"/dashboard/inboxes/{SUPPORT}/drafts/{draft_id}/send",
        data={"csrf": csrf_of(drafts), "thread_id": ""},
    )
    assert sent_draft.status_code == 303
    assert sent_draft.headers["location"].endswith(f"{SUPPORT}/drafts?flash=Draft+sent")
