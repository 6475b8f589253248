"""Signed links and HTML rewriting for open and click tracking (no I/O)."""

from __future__ import annotations

import html as html_lib
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailbridge.mail import signed_links, tracking
from mailbridge.storage.types import new_id

SECRET = b"s" * 32
BASE = "https://mail.example.net"


def token_of(url: str, path: str) -> str:
    assert url.startswith(BASE + path), url
    return url[len(BASE + path) :]


def test_open_token_round_trip_and_refusals() -> None:
    email_id = new_id()
    token = token_of(tracking.open_pixel_url(BASE, SECRET, email_id), tracking.OPEN_PATH)
    assert tracking.read_open_token(SECRET, token) == email_id
    # Another secret, another purpose, a changed payload or MAC: refused.
    assert tracking.read_open_token(b"other secret", token) is None
    assert tracking.read_unsubscribe_token(SECRET, token) is None
    payload, mac = token.split(".")
    other = token_of(tracking.open_pixel_url(BASE, SECRET, new_id()), tracking.OPEN_PATH)
    assert tracking.read_open_token(SECRET, f"{other.split('.')[0]}.{mac}") is None
    flipped = mac[:-2] + ("AA" if not mac.endswith("AA") else "BB")
    assert tracking.read_open_token(SECRET, f"{payload}.{flipped}") is None
    for garbage in ("", ".", "abc", "abc.def", "!!!.???", f"{payload}.", f".{mac}"):
        assert tracking.read_open_token(SECRET, garbage) is None


def test_click_token_carries_the_exact_target() -> None:
    email_id = new_id()
    target = "https://shop.example.org/p?id=3&ref=mail#top"
    token = token_of(tracking.click_url(BASE, SECRET, email_id, target), tracking.CLICK_PATH)
    click = tracking.read_click_token(SECRET, token)
    assert click == tracking.Click(email_id, target)
    # A forged target (payload swapped, old MAC kept) does not verify.
    mac = token.split(".")[1]
    forged = signed_links.sign(
        b"attacker", tracking.CLICK, signed_links.id_bytes(email_id) + b"https://evil.example"
    )
    assert tracking.read_click_token(SECRET, f"{forged.split('.')[0]}.{mac}") is None
    assert tracking.read_click_token(SECRET, forged) is None
    # Tokens of other purposes are no click tokens.
    unsubscribe = token_of(
        tracking.unsubscribe_url(BASE, SECRET, email_id), tracking.UNSUBSCRIBE_PATH
    )
    assert tracking.read_click_token(SECRET, unsubscribe) is None
    assert tracking.read_unsubscribe_token(SECRET, unsubscribe) == email_id


@pytest.mark.parametrize("target", ["mailto:a@b.c", "javascript:alert(1)", "/relative", "ftp://x"])
def test_only_http_links_are_tracked(target: str) -> None:
    with pytest.raises(ValueError):
        tracking.click_url(BASE, SECRET, new_id(), target)
    # Even signed with our secret, a non-http target is never a redirect.
    token = signed_links.sign(
        SECRET, tracking.CLICK, signed_links.id_bytes(new_id()) + target.encode()
    )
    assert tracking.read_click_token(SECRET, token) is None


def tracked_targets(html: str) -> list[str]:
    """The original URLs behind every click link of ``html``."""
    targets = []
    for href in re.findall(r'href="([^"]*)"', html, re.IGNORECASE):
        url = html_lib.unescape(href)
        if url.startswith(BASE + tracking.CLICK_PATH):
            click = tracking.read_click_token(SECRET, token_of(url, tracking.CLICK_PATH))
            assert click is not None
            targets.append(click.url)
    return targets


def rewrite(html: str, *, opens: bool = False, clicks: bool = True, email_id: str = "") -> str:
    return tracking.rewrite_html(
        html, base_url=BASE, secret=SECRET, email_id=email_id or new_id(),
        open_tracking=opens, click_tracking=clicks,
    )  # fmt: skip


def test_click_tracking_rewrites_http_links_only() -> None:
    source = (
        '<p><a href="https://a.example.org/x?y=1&amp;z=2">A</a> '
        "<A class='btn' HREF='http://b.example.org'>B</A> "
        "<a href=https://c.example.org/c>C</a> "
        '<a title="a > b href=https://not-this.example" href="https://d.example.org">D</a> '
        '<a href="mailto:me@example.org">mail</a> <a href="#top">top</a> '
        '<a name="anchor">no href</a> <abbr href="https://e.example.org">abbr</abbr> '
        '<!-- <a href="https://commented.example.org">x</a> --></p>'
    )
    result = rewrite(source)
    assert tracked_targets(result) == [
        "https://a.example.org/x?y=1&z=2",
        "http://b.example.org",
        "https://c.example.org/c",
        "https://d.example.org",
    ]
    assert 'href="mailto:me@example.org"' in result and 'href="#top"' in result
    assert '<abbr href="https://e.example.org">' in result
    assert '<!-- <a href="https://commented.example.org">x</a> -->' in result
    assert "class='btn'" in result and 'title="a > b href=https://not-this.example"' in result
    assert 'href="https://a.example.org' not in result and "HREF='http://b" not in result
    assert "<p>" in result and result.endswith("</p>")


def test_own_links_are_left_alone() -> None:
    email_id = new_id()
    unsubscribe = tracking.unsubscribe_url(BASE, SECRET, email_id)
    source = f'<a href="{unsubscribe}">Unsubscribe</a><a href="https://x.example.org">x</a>'
    result = rewrite(source, email_id=email_id)
    assert f'href="{unsubscribe}"' in result
    assert tracked_targets(result) == ["https://x.example.org"]


def test_open_pixel_goes_before_the_body_end_or_at_the_end() -> None:
    email_id = new_id()
    pixel = html_lib.escape(tracking.open_pixel_url(BASE, SECRET, email_id))
    with_body = rewrite(
        "<html><body><p>Hi</p></BODY></html>", opens=True, clicks=False, email_id=email_id
    )
    assert with_body.startswith("<html><body><p>Hi</p><img ")
    assert with_body.endswith("</BODY></html>")
    assert f'src="{pixel}"' in with_body and 'width="1" height="1"' in with_body
    fragment = rewrite("<p>Hi</p>", opens=True, clicks=False, email_id=email_id)
    assert fragment.startswith("<p>Hi</p><img ") and fragment.endswith("/>")


def test_switches_off_change_nothing() -> None:
    source = '<html><body><a href="https://x.example.org">x</a></body></html>'
    assert rewrite(source, opens=False, clicks=False) == source
    only_clicks = rewrite(source, opens=False, clicks=True)
    assert tracking.OPEN_PATH not in only_clicks and tracked_targets(only_clicks)


def test_download_links_expire() -> None:
    attachment_id = new_id()
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    url = signed_links.download_url(BASE, SECRET, attachment_id, now + timedelta(hours=1))
    token = token_of(url, signed_links.DOWNLOAD_PATH)
    assert signed_links.read_download_token(SECRET, token, now) == attachment_id
    assert (
        signed_links.read_download_token(SECRET, token, now + timedelta(minutes=59))
        == attachment_id
    )
    assert signed_links.read_download_token(SECRET, token, now + timedelta(hours=1)) is None
    assert signed_links.read_download_token(b"other", token, now) is None
    open_token = token_of(tracking.open_pixel_url(BASE, SECRET, attachment_id), tracking.OPEN_PATH)
    assert signed_links.read_download_token(SECRET, open_token, now) is None


# Hostile HTML: the parser decides what is a link; everything else is copied through.

TRACKED = re.compile(r'"https://mail\.example\.net/t/c/[^"]+"')


def rewritten_as_source(result: str, template: str, hrefs: list[str]) -> None:
    """``result`` is ``template`` with ``hrefs`` in place, each replaced by a click link
    in double quotes, and not one other character changed."""
    marked = TRACKED.sub("LINK", result)
    assert marked == template.format(*["LINK"] * len(hrefs))


def test_links_are_found_by_the_parser_and_only_their_values_change() -> None:
    hrefs = [
        '"https://a.example.org/x?y=1&amp;z=2"',
        "https://b.example.org/b",  # unquoted
        "'https://c.example.org/c'",
        '"https://d.example.org/&#x3f;q=&#38;"',  # numeric references
        '"  https://e.example.org/e  "',  # spaces around the URL
    ]
    template = (
        "<!DOCTYPE html>\n<HTML><head><style>a[href='https://style.example.org'] {{}}</style>"
        "<script>var a = '<a href=\"https://script.example.org\">';</script></head>\n"
        "<BODY class=x>\n<table><tr><td><A HREF={0} Target=_blank>one</A>"
        '<a\n  title="a > b href=https://title.example.org"\n  href={1}\n>two</a>'
        '<!-- <a href="https://comment.example.org">x</a> -->'
        '<![CDATA[<a href="https://cdata.example.org">]]>'
        '<p>unclosed <a id=x href={2}><b>bold<a title="t"href={3}>'
        "<a/href={4}/></td></tr></table>\n</BODY></HTML>"
    )
    source = template.format(*hrefs)
    result = rewrite(source)
    assert tracked_targets(result) == [
        "https://a.example.org/x?y=1&z=2",
        "https://b.example.org/b",
        "https://c.example.org/c",
        "https://d.example.org/?q=&",
        "https://e.example.org/e",
    ]
    rewritten_as_source(result, template, hrefs)


def test_named_references_without_a_semicolon_read_as_a_browser_reads_them() -> None:
    source = (
        '<a href="https://a.example.org/?x=1&region=eu&param=2&copy;">a</a>'
        '<a href="https://b.example.org/?x=1&amp=2&lt">b</a>'
    )
    # In an attribute, "&reg" before a letter and "&amp" before "=" are text.
    assert tracked_targets(rewrite(source)) == [
        "https://a.example.org/?x=1&region=eu&param=2\u00a9",
        "https://b.example.org/?x=1&amp=2<",
    ]


def test_the_first_href_counts_and_odd_anchors_are_left_alone() -> None:
    source = (
        '<a href="https://first.example.org" href="https://second.example.org">1</a>'
        '<a href href="https://after-an-empty-href.example.org">2</a>'
        '<a href="">3</a><a href="javascript:alert(1)">4</a>'
        '<abbr href="https://abbr.example.org">5</abbr><area href="https://area.example.org">'
        '<a href="https://unterminated.example.org'
    )
    result = rewrite(source)
    assert tracked_targets(result) == ["https://first.example.org"]
    tracked = TRACKED.search(result)
    assert tracked is not None
    assert result.replace(tracked.group(0), '"https://first.example.org"') == source
    upper = rewrite('<A HREF="HTTPS://UP.EXAMPLE.ORG/">up</A>')
    assert tracked_targets(upper) == ["HTTPS://UP.EXAMPLE.ORG/"]
    assert upper.startswith('<A HREF="https://mail.example.net/t/c/')


def test_the_pixel_goes_before_the_last_real_body_end() -> None:
    source = (
        "<html><body><script>document.write('</body>')</script>"
        "<!-- </body> --><p>Hi</p></body ><!-- trailer --></html>"
    )
    result = rewrite(source, opens=True, clicks=False)
    assert result.startswith(source[: source.index("</body >")] + "<img ")
    assert result.endswith("/></body ><!-- trailer --></html>")
    assert result.count("<img ") == 1
    in_a_comment = rewrite("<p>Hi</p><!-- </body> -->", opens=True, clicks=False)
    assert in_a_comment.startswith("<p>Hi</p><!-- </body> --><img ")


PIECES = [*"<>/!-='\" \n\tabhrefdyscipt&;#x:.", "https://", "<a ", "href=", "</body>", "<!--"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_any_text_is_copied_through_but_for_its_links(source: str) -> None:
    result = rewrite(source)
    if tracking.CLICK_PATH not in result:
        assert result == source
    for target in tracked_targets(result):
        assert tracking.is_trackable(target)
    opened = rewrite(source, opens=True, clicks=False)
    assert opened.count(tracking.OPEN_PATH) == source.count(tracking.OPEN_PATH) + 1
