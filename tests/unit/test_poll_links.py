"""Poll vote links: the signed token and the block rendered into mail (no I/O)."""

from __future__ import annotations

import base64
import html as html_lib
import re

import pytest

from mailbridge.mail import signed_links, tracking
from mailbridge.services.polls import PollLinks, Voter, read_vote_token
from mailbridge.services.polls._links import (
    Ballot,
    EmbeddedPoll,
    embedded_poll_ids,
    vote_token,
    vote_url,
)
from mailbridge.storage.types import new_id

SECRET = b"k" * 32
BASE = "https://mail.example.net"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.parametrize(
    "voter",
    [Voter.of(new_id(), "ann@corp.io"), Voter.of(None, " Ann@Corp.IO ")],
    ids=["contact", "address"],
)
def test_a_token_round_trips_poll_team_option_and_voter(voter: Voter) -> None:
    poll_id, team_id = new_id(), new_id()
    token = vote_token(SECRET, poll_id, team_id, 3, voter)
    assert read_vote_token(SECRET, token) == Ballot(poll_id, team_id, 3, voter)
    if voter.contact_id is None:
        assert voter.key == "ann@corp.io"  # an address votes lower-cased


def test_changing_any_part_of_a_token_makes_it_nobodys() -> None:
    poll_id, team_id, contact_id = new_id(), new_id(), new_id()
    token = vote_token(SECRET, poll_id, team_id, 1, Voter.of(contact_id, "ann@corp.io"))
    encoded_payload, mac = token.split(".")
    payload = _unb64(encoded_payload)
    # Every byte of the payload: the poll, the team, the option, the voter's kind and key.
    for index in range(len(payload)):
        changed = bytearray(payload)
        changed[index] ^= 0x01
        assert read_vote_token(SECRET, f"{_b64(bytes(changed))}.{mac}") is None, index
    # Another voter's payload under this MAC, this payload under a changed MAC, another
    # secret, another purpose's MAC over the same payload.
    other = vote_token(SECRET, poll_id, team_id, 1, Voter.of(new_id(), "bob@corp.io"))
    assert read_vote_token(SECRET, f"{other.split('.')[0]}.{mac}") is None
    flipped = _b64(bytes(b ^ 0xFF for b in _unb64(mac)))
    assert read_vote_token(SECRET, f"{encoded_payload}.{flipped}") is None
    assert read_vote_token(b"another secret", token) is None
    # Another spelling of the same bytes (the unused low bits of the MAC's last character).
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    respelled = mac[:-1] + alphabet[alphabet.index(mac[-1]) ^ 1]
    assert _unb64(respelled) == _unb64(mac)
    assert read_vote_token(SECRET, f"{encoded_payload}.{respelled}") is None
    click = signed_links.sign(SECRET, tracking.CLICK, payload)
    assert read_vote_token(SECRET, click) is None
    for garbage in ("", ".", "abc", "abc.def", f"{encoded_payload}.", f".{mac}", token + "A"):
        assert read_vote_token(SECRET, garbage) is None


def test_a_signed_but_malformed_payload_is_refused() -> None:
    header = signed_links.id_bytes(new_id()) + signed_links.id_bytes(new_id())
    for payload in (
        header,  # no option, no voter
        header + bytes((0, 0)) + b"short",  # a contact key that is not 16 bytes
        header + bytes((0, 7)) + b"x" * 16,  # an unknown kind of voter
        header + bytes((0, 1)) + b"\xff\xfe",  # an address that is not UTF-8
        header + bytes((0, 1)) + b"a" * 321,  # longer than any address
    ):
        assert read_vote_token(SECRET, signed_links.sign(SECRET, "poll-vote", payload)) is None


def test_vote_urls_live_under_the_public_vote_path_and_skip_click_tracking() -> None:
    url = vote_url(BASE + "/", SECRET, new_id(), new_id(), 0, Voter.of(None, "a@corp.io"))
    assert url.startswith(BASE + signed_links.VOTE_PATH)
    html = f'<a href="{url}">Yes</a><a href="https://shop.io/deal">Deal</a>'
    rewritten = tracking.rewrite_html(
        html, base_url=BASE, secret=SECRET, email_id=new_id(), open_tracking=False,
        click_tracking=True,
    )  # fmt: skip
    assert f'href="{url}"' in rewritten  # a vote link is already ours: not redirected
    assert "https://shop.io/deal" not in rewritten


def _links(*polls: EmbeddedPoll) -> PollLinks:
    return PollLinks({poll.id: poll for poll in polls}, BASE, SECRET)


def test_a_poll_renders_one_signed_link_per_option_for_its_recipient() -> None:
    team_id, contact_id = new_id(), new_id()
    poll = EmbeddedPoll(new_id(), team_id, "Tea <or> coffee?", ("Tea & milk", "Coffee"))
    links = _links(poll)
    voter = Voter.of(contact_id, "ann@corp.io")

    text = links.render(f"Hi\n{{{{{{poll:{poll.id}}}}}}}\nBye", voter)
    lines = text.splitlines()
    assert lines[:2] == ["Hi", "Tea <or> coffee?"] and lines[-1] == "Bye"
    for index, (line, label) in enumerate(zip(lines[2:4], poll.options, strict=True)):
        shown, url = line.split(": ", 1)
        assert shown == label
        token = url.removeprefix(BASE + signed_links.VOTE_PATH)
        assert read_vote_token(SECRET, token) == Ballot(poll.id, team_id, index, voter)

    block = links.render(f"<p>{{{{{{ poll:{poll.id} }}}}}}</p>", voter, html=True)
    assert "Tea &lt;or&gt; coffee?" in block and "Tea &amp; milk" in block
    hrefs = [html_lib.unescape(h) for h in re.findall(r'href="([^"]+)"', block)]
    assert len(hrefs) == 2
    assert read_vote_token(SECRET, hrefs[1].rsplit("/", 1)[1]) == Ballot(poll.id, team_id, 1, voter)


def test_variables_render_around_polls_and_unknown_polls_render_as_nothing() -> None:
    poll = EmbeddedPoll(new_id(), new_id(), "{{{FIRST_NAME}}}?", ("a", "b"))
    links = _links(poll)
    rendered = links.render(
        f"{{{{{{FIRST_NAME}}}}}} {{{{{{poll:{poll.id}}}}}}} {{{{{{poll:{new_id()}}}}}}}.",
        Voter.of(None, "a@corp.io"),
        around=lambda part: part.replace("{{{FIRST_NAME}}}", "Ann"),
    )
    assert rendered.startswith("Ann {{{FIRST_NAME}}}?\n")  # the question is not a template
    assert rendered.endswith(" .")


def test_embedded_poll_ids_are_found_once_each_in_order() -> None:
    first, second = new_id(), new_id()
    texts = (
        f"{{{{{{poll:{second}}}}}}} {{{{{{poll:{first}}}}}}}",
        None,
        f"{{{{{{poll:{second}}}}}}}",
    )
    assert embedded_poll_ids(*texts) == [second, first]
    assert embedded_poll_ids("{{{FIRST_NAME}}} {{poll:x}}", "") == []
