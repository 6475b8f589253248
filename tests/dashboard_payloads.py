"""Values that try to run script in the dashboard, stored the way a team's members, its
API clients and strangers sending it mail can store them; shared by the dashboard's
markup test (integration) and its browser test (acceptance).

Each payload calls ``pwn('<where>')``: the browser test defines ``pwn`` in every page
before the page's own script and counts the calls, so a payload that runs is seen
whatever page it ran on.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any

import httpx


def run(where: str) -> str:
    return f"pwn('{where}')"


def breakout(where: str) -> str:
    """Out of a text node, a double- or single-quoted attribute and a JavaScript string."""
    return (
        f"\"'><svg onload={run(where)}><script>{run(where)}</script>"
        f"<img src=x onerror={run(where)}>'+{run(where)}+'"
    )


# Member addresses only need an "@": one out of a JavaScript string in an event-handler
# attribute (the finding's), one out of the attribute and into markup.
MEMBER_IN_A_STRING = f"x'+{run('member-string')}+'@evil.io"
MEMBER_IN_MARKUP = f'"><img src=x onerror={run("member-markup")}>@evil.io'


def mail_html(where: str, remote: str | None = None) -> str:
    """A mail's HTML: script that must not run in its frame, an inline style that must
    still apply (``p.styled`` red and 30 px), and — with ``remote``, a server's base URL —
    every usual way to load something from that server when the mail is read."""
    parts = [
        f"<script>document.documentElement.dataset.pwned = '{where}'</script>",
        f"<img src=x onerror=\"document.documentElement.dataset.pwned = '{where}'\">",
        '<p class="styled" style="color: rgb(185, 28, 28); font-size: 30px">Styled by the mail</p>',
    ]
    if remote is not None:
        parts = [
            f'<link rel="stylesheet" href="{remote}/link.css">',
            f"<style>@import url({remote}/import.css);"
            f" .bg {{ background: url({remote}/css-bg.png) }}</style>",
            *parts,
            f'<img src="{remote}/img.png" alt="remote">',
            f'<img srcset="{remote}/srcset.png 2x" alt="">',
            '<div class="bg">css background</div>',
            f"<div style=\"background-image: url('{remote}/inline-bg.png')\">inline bg</div>",
            f'<picture><source srcset="{remote}/source.png"><img alt="" src="data:,"></picture>',
            f'<video poster="{remote}/poster.png"></video>',
            f'<table background="{remote}/table-bg.png"><tr><td>table</td></tr></table>',
            f'<svg><image href="{remote}/svg-image.png" width="10" height="10"/></svg>',
            f'<iframe src="{remote}/frame.html"></iframe>',
            f'<object data="{remote}/object.bin"></object>',
        ]
    return (
        "<!DOCTYPE html><html><head><title>mail</title></head><body>"
        + "".join(parts)
        + "</body></html>"
    )


# What a remote server may be asked for once the member loads a message's images.
IMAGE_PATHS = frozenset({
    "/img.png", "/srcset.png", "/css-bg.png", "/inline-bg.png", "/source.png", "/poster.png",
    "/table-bg.png", "/svg-image.png",
})  # fmt: skip


def received_message(to: str, remote: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = Address(breakout("received-from"), "stranger", "elsewhere.example")
    message["To"] = to
    message["Subject"] = breakout("received-subject")
    message.set_content("The plain part.")
    message.add_alternative(mail_html("received-frame", remote), subtype="html")
    return message


@dataclass(frozen=True)
class Seeded:
    """The ids of what :func:`seed` stored, to reach its pages by."""

    audience: str
    contact: str
    template: str
    campaign: str
    automation: str
    poll: str

    def pages(self) -> list[str]:
        return [
            f"/dashboard/audiences/{self.audience}", f"/dashboard/contacts/{self.contact}",
            "/dashboard/templates", f"/dashboard/templates/{self.template}",
            "/dashboard/campaigns", f"/dashboard/campaigns/{self.campaign}",
            "/dashboard/automations", f"/dashboard/automations/{self.automation}",
            "/dashboard/polls", f"/dashboard/polls/{self.poll}",
        ]  # fmt: skip


async def _call(
    client: httpx.AsyncClient, headers: dict[str, str], path: str, body: dict[str, Any]
) -> dict[str, Any]:
    answer = await client.post(path, json=body, headers=headers)
    assert answer.status_code in (200, 201), (path, answer.text)
    created: dict[str, Any] = answer.json()
    return created


async def seed(client: httpx.AsyncClient, headers: dict[str, str], domain: str) -> Seeded:
    """Contacts, a template, a campaign, an automation and a poll with hostile names,
    through the API with a key of a team that has ``domain`` verified."""
    audience = await _call(client, headers, "/audiences", {"name": breakout("audience")})
    contact = await _call(client, headers, "/contacts", {
        "email": "reader@mail.net", "audience_id": audience["id"],
        "first_name": f"<script>{run('contact')}</script>", "last_name": breakout("contact"),
    })  # fmt: skip
    template = await _call(client, headers, "/templates", {
        "name": breakout("template-name"), "subject": breakout("template-subject"),
        "from": f"Shop <news@{domain}>", "html": mail_html("template-frame"),
    })  # fmt: skip
    campaign = await _call(client, headers, "/campaigns", {
        "name": breakout("campaign-name"), "subject": breakout("campaign-subject"),
        "from": f"Shop <news@{domain}>", "html": "<p>Hello</p>", "audience_id": audience["id"],
    })  # fmt: skip
    automation = await _call(client, headers, "/automations", {
        "name": breakout("automation"), "audience_id": audience["id"], "domain": domain,
        "steps": [
            {"key": "start", "type": "trigger", "config": {"event_name": "signed_up"}},
            {"key": "greet", "type": "contact_update", "config": {"first_name": "Greeted"}},
        ], "connections": [{"from": "start", "to": "greet"}],
    })  # fmt: skip
    poll = await _call(client, headers, "/polls", {
        "question": breakout("poll-question"),
        "options": [breakout("poll-option"), "Tea"],
    })  # fmt: skip
    return Seeded(audience["id"], contact["id"], template["id"], campaign["id"],
                  automation["id"], poll["id"])  # fmt: skip
