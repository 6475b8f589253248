"""Inbound mail, parsing: bounces, complaints and auto-replies from a corpus shaped like what
Gmail, Outlook/Exchange, Postfix, Exim, qmail, Yahoo's and Microsoft's feedback loops and a Sieve
vacation responder send (tests/fixtures/inbound/), and a parser that never raises."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailbridge.mail.inbound_reports import (
    Bounce,
    BouncedRecipient,
    Complaint,
    is_auto_reply,
    message_email_id,
    parse_report,
    referenced_message_ids,
    verp_email_id,
)

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "inbound"
SAMPLES = {path.name: path.read_bytes() for path in sorted(CORPUS.glob("*.eml"))}


def sample(name: str) -> bytes:
    return SAMPLES[name]


def parsed(raw: bytes) -> EmailMessage:
    return BytesParser(policy=policy.default).parsebytes(raw)


def failed(address: str, status: str, diagnostic: str) -> BouncedRecipient:
    return BouncedRecipient(address, status, "failed", diagnostic, hard=True)


def test_the_corpus_is_there() -> None:
    assert len(SAMPLES) >= 8
    assert b"\r\n" in sample("outlook_ndr_recipient_not_found.eml")  # one sample has CRLFs


# ---------------------------------------------------------------------------------------------
# Bounces


def test_gmail_dsn() -> None:
    report = parse_report(sample("gmail_dsn_no_such_user.eml"))
    assert isinstance(report, Bounce)
    (recipient,) = report.recipients
    assert recipient.address == "jane.doe.nonexistent@gmail.com"
    assert (recipient.status, recipient.action, recipient.hard) == ("5.1.1", "failed", True)
    assert recipient.diagnostic is not None
    assert recipient.diagnostic.startswith("550-5.1.1 The email account that you tried to reach")
    assert recipient.diagnostic.endswith("- gsmtp")
    assert "\n" not in recipient.diagnostic
    assert report.original_message_id == "<01a211f2-a467-7000-aecd-b7e20c3e3e91@shop.io>"
    assert report.original_email_id == "01a211f2-a467-7000-aecd-b7e20c3e3e91"


def test_outlook_ndr_with_rfc822_headers_and_crlf() -> None:
    assert parse_report(sample("outlook_ndr_recipient_not_found.eml")) == Bounce(
        recipients=(
            failed(
                "someone@contoso.com",
                "5.1.10",
                "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient someone@contoso.com not "
                "found by SMTP address lookup",
            ),
        ),
        original_message_id="<0194684b-2c7e-7a31-9d0f-5be2c8a1f3d4@shop.io>",
        original_email_id="0194684b-2c7e-7a31-9d0f-5be2c8a1f3d4",
    )


def test_postfix_dsn_several_recipients_relayed_one_left_out() -> None:
    assert parse_report(sample("postfix_dsn_three_recipients.eml")) == Bounce(
        recipients=(
            failed(
                "old.user@example-corp.de",
                "5.1.1",
                "550 5.1.1 <old.user@example-corp.de>: Recipient address rejected: User unknown "
                "in virtual mailbox table",
            ),
            failed(
                "full.box@example-corp.de",
                "5.2.2",
                "552 5.2.2 <full.box@example-corp.de>: Mailbox full",
            ),
            failed(
                "someone@no-such-domain.example",
                "5.4.4",
                "Host or domain name not found. Name service error for "
                "name=no-such-domain.example type=A: Host not found",
            ),
        ),
        original_message_id="<01946a10-7f2b-7c44-8e19-3a6d5c2b9e07@shop.io>",
        original_email_id="01946a10-7f2b-7c44-8e19-3a6d5c2b9e07",
    )


def test_postfix_delay_notice_is_soft() -> None:
    assert parse_report(sample("postfix_delayed.eml")) == Bounce(
        recipients=(
            BouncedRecipient(
                "pat@slow-host.example",
                "4.4.1",
                "delayed",
                "connect to mx.slow-host.example[203.0.113.77]:25: Connection timed out",
                hard=False,
            ),
        ),
        original_message_id="<01946b77-0d3c-7e85-a2f6-9c1b4d8e3a52@shop.io>",
        original_email_id="01946b77-0d3c-7e85-a2f6-9c1b4d8e3a52",
    )


def test_exim_text_bounce_through_flufl() -> None:
    assert parse_report(sample("exim_text_bounce.eml")) == Bounce(
        recipients=(BouncedRecipient("info@small-biz.example", None, "failed", None, hard=True),),
        original_message_id="<01946f02-5e91-7b3d-b8c4-71a2e6f0d9c3@shop.io>",  # from the copy
        original_email_id="01946f02-5e91-7b3d-b8c4-71a2e6f0d9c3",
    )


def test_qmail_bounce_original_found_by_its_return_path() -> None:
    # The copy qmail returns carries no Message-ID: the Return-Path in it names the email.
    assert parse_report(sample("qmail_failure_notice.eml")) == Bounce(
        recipients=(BouncedRecipient("customer@oldisp.example", None, "failed", None, hard=True),),
        original_message_id=None,
        original_email_id="0194714a-c3d8-7f12-9a6e-2b5c8d1e4f70",
    )


def test_the_verp_envelope_recipient_comes_first() -> None:
    other = "0194a000-0000-7000-8000-000000000001"
    report = parse_report(
        sample("gmail_dsn_no_such_user.eml"),
        envelope_recipients=["postmaster@shop.io", f"BOUNCES+{other.upper()}@bounces.shop.io"],
    )
    assert isinstance(report, Bounce)
    assert report.original_email_id == other
    assert report.original_message_id == "<01a211f2-a467-7000-aecd-b7e20c3e3e91@shop.io>"
    # A recipient that is no VERP address changes nothing.
    report = parse_report(sample("gmail_dsn_no_such_user.eml"), ["postmaster@shop.io"])
    assert isinstance(report, Bounce)
    assert report.original_email_id == "01a211f2-a467-7000-aecd-b7e20c3e3e91"


EMAIL_ID = "0194b111-2222-7333-8444-555566667777"


def dsn(
    *recipient_blocks: str,
    original: str = "",
    content_type: str = "delivery-status",
    text: str = "Sorry.\r\n",
) -> bytes:
    parts = [
        "From: MAILER-DAEMON@mx.example.net\r\n"
        "To: bounces+x@bounces.shop.io\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        f"--b\r\nContent-Type: text/plain\r\n\r\n{text}",
        f"--b\r\nContent-Type: message/{content_type}\r\n\r\n"
        "Reporting-MTA: dns; mx.example.net\r\n\r\n" + "\r\n".join(recipient_blocks),
    ]
    if original:
        parts.append(f"--b\r\nContent-Type: text/rfc822-headers\r\n\r\n{original}")
    return ("".join(parts) + "--b--\r\n").encode()


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        # Postfix gives up after its queue lifetime with "failed" and a 4.x.x status: soft.
        ("Final-Recipient: rfc822; a@x.example\r\nAction: failed\r\nStatus: 4.4.7\r\n", (False,)),
        ("Final-Recipient: rfc822;<a@x.example>\r\nAction: failed\r\n", (True,)),  # no status
        ("Final-Recipient: rfc822; a@x.example\r\nAction: Delayed\r\nStatus: 5.0.0\r\n", (False,)),
        ("Final-Recipient: RFC822; a@x.example\r\nStatus: 5.0.0 (permanent)\r\n", (True,)),
        ("Final-Recipient: rfc822; a@x.example\r\nAction: delivered\r\nStatus: 2.0.0\r\n", None),
        ("Original-Recipient: rfc822; a@x.example\r\nAction: failed\r\nStatus: 5.7.1\r\n", (True,)),
    ],
)
def test_hard_and_soft(block: str, expected: tuple[bool] | None) -> None:
    report = parse_report(dsn(block))
    if expected is None:
        assert report is None  # a success notification is no bounce
        return
    assert isinstance(report, Bounce)
    (recipient,) = report.recipients
    assert recipient.address == "a@x.example"
    assert (recipient.hard,) == expected


def test_dsn_original_email_id_from_return_path_when_message_id_is_foreign() -> None:
    original = (
        f"Return-Path: <bounces+{EMAIL_ID}@bounces.shop.io>\r\n"
        "Message-ID: <rewritten.by.a.relay@relay.example>\r\n\r\n"
    )
    block = "Final-Recipient: rfc822; a@x.example\r\nAction: failed\r\nStatus: 5.1.1\r\n"
    report = parse_report(dsn(block, original=original))
    assert isinstance(report, Bounce)
    assert report.original_message_id == "<rewritten.by.a.relay@relay.example>"
    assert report.original_email_id == EMAIL_ID


def test_global_delivery_status() -> None:
    block = "Final-Recipient: utf-8; zoë@exämple.example\r\nAction: failed\r\nStatus: 5.1.1\r\n"
    report = parse_report(dsn(block, content_type="global-delivery-status"))
    assert isinstance(report, Bounce)
    assert [r.address for r in report.recipients] == ["zoë@exämple.example"]


# ---------------------------------------------------------------------------------------------
# Older and odder MTAs: one test per fix of the issue


@pytest.mark.parametrize("action", ["failure", "error", "Failure (permanent)", "ERROR"])
def test_failure_and_error_actions_are_failures(action: str) -> None:
    # Older MTAs write "failure", OpenSMTPD "error": both read as "failed", not as no bounce.
    block = f"Final-Recipient: rfc822; a@x.example\r\nAction: {action}\r\nStatus: 5.1.1\r\n"
    report = parse_report(dsn(block))
    assert isinstance(report, Bounce)
    assert report.recipients == (BouncedRecipient("a@x.example", "5.1.1", "failed", None, True),)


def text_report(subject: str, body: str, sender: str = "Relay <relay@mx.example.net>") -> bytes:
    """A text bounce or notice from a sender that does not look like a mailer daemon."""
    return (
        f"From: {sender}\r\nTo: bounces+x@bounces.shop.io\r\nSubject: {subject}\r\n"
        f"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}"
    ).encode()


SENDMAIL_WARNING = (
    "    **********************************************\r\n"
    "    **      THIS IS A WARNING MESSAGE ONLY      **\r\n"
    "    **  YOU DO NOT NEED TO RESEND YOUR MESSAGE  **\r\n"
    "    **********************************************\r\n\r\n"
    "The original message was received at Mon, 3 Feb 2025 09:12:44 +0100\r\n"
    "from mail.shop.io [203.0.113.9]\r\n\r\n"
    "   ----- The following addresses had transient non-fatal errors -----\r\n"
    "<pat@slowhost.example>\r\n\r\n"
    "   ----- Transcript of session follows -----\r\n"
    "<pat@slowhost.example>... Deferred: Connection timed out with mx.slowhost.example.\r\n"
    "Warning: message still undelivered after 4 hours\r\n"
    "Will keep trying until message is 5 days old\r\n"
)
EXIM_WARNING = (
    "This message was created automatically by mail delivery software.\r\n"
    "A message that you sent has not yet been delivered to one or more of its\r\n"
    "recipients after more than 24 hours on the queue on mx.example.net.\r\n\r\n"
    "The address to which the message has not yet been delivered is:\r\n\r\n"
    "  pat@slowhost.example\r\n"
    "    Delay reason: SMTP error from remote mail server after RCPT TO:<pat@slowhost.example>:\r\n"
    "    451 4.2.0 Mailbox temporarily unavailable\r\n\r\n"
    "No action is required on your part.\r\n"
)
GMAIL_DELAY = (
    "This is an automatically generated Delivery Status Notification\r\n\r\n"
    "THIS IS A WARNING MESSAGE ONLY.\r\n\r\n"
    "YOU DO NOT NEED TO RESEND YOUR MESSAGE.\r\n\r\n"
    "Delivery to the following recipient has been delayed:\r\n\r\n"
    "     pat@slowhost.example\r\n\r\n"
    "Message will be retried for 2 more day(s)\r\n"
)


@pytest.mark.parametrize(
    ("subject", "body"),
    [
        ("Warning: could not send message for past 4 hours", SENDMAIL_WARNING),
        ("Warning: message 1tXyZa-000Abc-7Q delayed 24 hours", EXIM_WARNING),
        ("Delivery Status Notification (Delay)", GMAIL_DELAY),
        ("Mail Delivery Warning", SENDMAIL_WARNING),
    ],
)
def test_warning_notices_are_delays(subject: str, body: str) -> None:
    # A warning's subject lets the notice reach the detectors; what it reports is a delay, even
    # where flufl.bounce's sendmail matcher calls "transient non-fatal errors" permanent.
    report = parse_report(text_report(subject, body))
    assert isinstance(report, Bounce)
    assert report.recipients == (
        BouncedRecipient("pat@slowhost.example", None, "delayed", None, hard=False),
    )


def test_a_hosted_exchange_delivery_warning_is_a_delay() -> None:
    # flufl.bounce's warning matcher knows this notice but refuses its hyphenated domain.
    assert parse_report(sample("hosted_exchange_delivery_warning.eml")) == Bounce(
        recipients=(
            BouncedRecipient("sam.reader@isp-mail.example", None, "delayed", None, hard=False),
        ),
        original_message_id=None,  # the copy of the original is quoted ("> "), not parsed
        original_email_id="0194c2d1-5e6f-7a08-b9c1-d2e3f4a5b6c7",  # its tagged Delivered-To
    )


EXIM_FAILURE = (
    "This message was created automatically by mail delivery software.\r\n\r\n"
    "A message that you sent could not be delivered to one or more of its\r\n"
    "recipients. This is a permanent error. The following address(es) failed:\r\n\r\n"
    "  pat@no-such-host.example\r\n"
    "    Unrouteable address\r\n\r\n"
    "------ This is a copy of the message, including all the headers. ------\r\n\r\n"
    f"Message-ID: <{EMAIL_ID}@shop.io>\r\nSubject: Your order\r\n\r\nHello\r\n"
)


@pytest.mark.parametrize(
    "subject",
    [
        "=?utf-8?b?VW5kZWxpdmVyZWQgTWFpbCBSZXR1cm5lZCB0byBTZW5kZXI=?=",
        "=?utf-8?q?Delivery_Status_Notification_=28Failure=29?=",
        "=?iso-8859-1?q?Mail_nicht_zustellbar=3A_Ihre_Bestellung?=",
    ],
)
def test_encoded_subjects_are_decoded_before_matching(subject: str) -> None:
    assert parse_report(text_report(subject, EXIM_FAILURE)) == Bounce(
        recipients=(BouncedRecipient("pat@no-such-host.example", None, "failed", None, True),),
        original_message_id=f"<{EMAIL_ID}@shop.io>",
        original_email_id=EMAIL_ID,
    )
    # ... and before an automatic reply's subject is matched.
    raw = (
        "From: a@b.example\r\nX-Auto-Response-Suppress: OOF\r\n"
        "Subject: =?utf-8?q?Automatische_Antwort=3A_Ihre_Bestellung?=\r\n\r\nx"
    )
    assert is_auto_reply(raw.encode())


SENDMAIL_FAILURE = (
    "   ----- The following addresses had permanent fatal errors -----\r\n"
    "<pat@slowhost.example>\r\n"
    "    (reason: 550 5.1.1 <pat@slowhost.example>... User unknown)\r\n\r\n"
    "   ----- Transcript of session follows -----\r\n"
)


def test_a_dsn_without_a_usable_recipient_goes_to_the_text_detectors() -> None:
    # An X.400 gateway's recipient block names no mail address: the text part still does.
    block = "Final-Recipient: x400; /S=pat/O=slowhost/PRMD=EXAMPLE/\r\nAction: failed\r\n"
    report = parse_report(dsn(block + "Status: 5.1.1\r\n", text=SENDMAIL_FAILURE))
    assert isinstance(report, Bounce)
    assert report.recipients == (
        BouncedRecipient("pat@slowhost.example", None, "failed", None, hard=True),
    )
    # A success notification stays no bounce, whatever its text says.
    relayed = "Final-Recipient: rfc822; pat@slowhost.example\r\nAction: relayed\r\n"
    assert parse_report(dsn(relayed + "Status: 2.0.0\r\n", text=SENDMAIL_FAILURE)) is None


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            "Original-Recipient: rfc822; pat@shop-customer.example\r\n"
            "Final-Recipient: rfc822; pat.smith@mailhost.example\r\n",
            "pat@shop-customer.example",
        ),
        (
            "Final-Recipient: rfc822; pat.smith@mailhost.example\r\n"
            "Original-Recipient: RFC822;<pat@shop-customer.example>\r\n",
            "pat@shop-customer.example",
        ),
        (  # not of type rfc822
            "Original-Recipient: x-local; pat@shop-customer.example\r\n"
            "Final-Recipient: rfc822; pat.smith@mailhost.example\r\n",
            "pat.smith@mailhost.example",
        ),
        (  # rfc822 but no address
            "Original-Recipient: rfc822; pat\r\n"
            "Final-Recipient: rfc822; pat.smith@mailhost.example\r\n",
            "pat.smith@mailhost.example",
        ),
        ("Final-Recipient: rfc822; pat.smith@mailhost.example\r\n", "pat.smith@mailhost.example"),
    ],
)
def test_the_original_recipient_wins_over_the_final_one(fields: str, expected: str) -> None:
    report = parse_report(dsn(fields + "Action: failed\r\nStatus: 5.1.1\r\n"))
    assert isinstance(report, Bounce)
    assert [recipient.address for recipient in report.recipients] == [expected]


def test_an_x400_gateway_gives_up_after_its_queue_lifetime() -> None:
    assert parse_report(sample("x400_gateway_dsn_expired.eml")) == Bounce(
        recipients=(
            BouncedRecipient(
                "kim@zeus.gateway.example",  # the Original-Recipient: Final is an X.400 name
                "4.4.7",
                "failed",
                "Reason 1 (Unable-To-Transfer); Diagnostic 5 (Maximum-Time-Expired)",
                hard=False,  # failed with 4.x.x: the address may well be fine
            ),
        ),
        original_message_id="<0194c5e8-1a2b-7c3d-8e4f-5a6b7c8d9e0f@shop.io>",
        original_email_id="0194c5e8-1a2b-7c3d-8e4f-5a6b7c8d9e0f",
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("Action: failed\r\nStatus: 5.1.1\r\n", ("failed", True)),
        ("Action: Failure\r\nStatus: 5.1.1\r\n", ("failed", True)),
        ("Action: failed\r\n", ("failed", True)),
        ("Action: failed\r\nStatus: 4.4.7\r\n", ("failed", False)),
        ("Action: failed\r\nStatus: 4.4.1\r\n", ("failed", False)),
        ("Action: delayed\r\nStatus: 4.4.1\r\n", ("delayed", False)),
        ("Action: DELAYED (retrying)\r\nStatus: 5.0.0\r\n", ("delayed", False)),
        ("Status: 5.2.2\r\n", ("failed", True)),  # no action: the status class says it
        ("Status: 4.2.2\r\n", ("delayed", False)),
        ("Action: bounced\r\nStatus: 5.1.1\r\n", ("failed", True)),  # an action nobody defined
    ],
)
def test_actions_are_normalised_and_the_status_class_decides_hard(
    fields: str, expected: tuple[str, bool]
) -> None:
    report = parse_report(dsn("Final-Recipient: rfc822; a@x.example\r\n" + fields))
    assert isinstance(report, Bounce)
    (recipient,) = report.recipients
    assert (recipient.action, recipient.hard) == expected


# ---------------------------------------------------------------------------------------------
# Complaints


def test_yahoo_arf() -> None:
    assert parse_report(sample("yahoo_arf_abuse.eml")) == Complaint(
        feedback_type="abuse",
        original_message_id="<019475e9-1b4a-7d6c-8f20-d3e7a9c5b168@shop.io>",
        original_email_id="019475e9-1b4a-7d6c-8f20-d3e7a9c5b168",
        original_recipient="sam.reader@yahoo.com",
        user_agent="Yahoo!-Mail-Feedback/2.0",
    )


def test_microsoft_jmrp() -> None:
    # No Original-Rcpt-To: the recipient comes from X-HmXmrOriginalRecipient in the original.
    assert parse_report(sample("microsoft_jmrp_arf.eml")) == Complaint(
        feedback_type="abuse",
        original_message_id="<01947a3c-8e5f-7a19-b2d4-6c0f1e9a7d83@shop.io>",
        original_email_id="01947a3c-8e5f-7a19-b2d4-6c0f1e9a7d83",
        original_recipient="lee.customer@outlook.com",
        user_agent="Hotmail FBL",
    )


def test_arf_fraud_with_headers_only_and_a_foreign_message_id() -> None:
    assert parse_report(sample("arf_fraud_headers_only.eml")) == Complaint(
        feedback_type="fraud",
        original_message_id="<CAJ7q2Lr8dKxq0Pz+AbC-12345@relay.shop-partner.example>",
        original_email_id="01947c88-4d2e-7b50-9e3a-f1c6b8d2a04e",  # from the Return-Path
        original_recipient="robin@isp-mail.example",
        user_agent="ISPFeedback/3.1",
    )


def test_redacted_jmrp_recipient_is_none() -> None:
    raw = sample("microsoft_jmrp_arf.eml").replace(
        b"X-HmXmrOriginalRecipient: <lee.customer@outlook.com>",
        b"X-HmXmrOriginalRecipient: <removed>",
    )
    report = parse_report(raw)
    assert isinstance(report, Complaint)
    assert report.original_recipient is None


# ---------------------------------------------------------------------------------------------
# Everything else


@pytest.mark.parametrize(
    "name",
    [
        "sieve_vacation_autoreply.eml",
        "exchange_automatic_reply.eml",
        "gmail_human_reply.eml",
        "outlook_human_reply.eml",
    ],
)
def test_replies_are_no_report(name: str) -> None:
    assert parse_report(sample(name)) is None


def test_a_person_writing_about_a_failed_delivery_is_no_bounce() -> None:
    raw = sample("gmail_human_reply.eml").replace(
        b"Subject: Re: Your order #10511 has shipped",
        b"Subject: Re: Delivery failed? The following addresses had problems",
    )
    assert parse_report(raw) is None


def test_a_person_forwarding_a_bounce_is_no_bounce() -> None:
    subject = "Fwd: Mail delivery failed: returning message to sender"
    forwarded = "---------- Forwarded message ---------\r\n\r\n" + EXIM_FAILURE
    assert parse_report(text_report(subject, forwarded, "Alex <alex@example.net>")) is None


@pytest.mark.parametrize("raw", [b"", b"\x00\xff", b"Subject: hi\r\n\r\nhello", b"\r\n\r\n--"])
def test_nothing_much_is_no_report(raw: bytes) -> None:
    assert parse_report(raw) is None


# ---------------------------------------------------------------------------------------------
# Ids


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (f"bounces+{EMAIL_ID}@bounces.shop.io", EMAIL_ID),
        (f"<Bounces+{EMAIL_ID.upper()}@BOUNCES.SHOP.IO>", EMAIL_ID),
        (f" bounces+{EMAIL_ID}@send.shop.io ", EMAIL_ID),
        (f"bounces+{EMAIL_ID}", None),  # no domain
        (f"bounce+{EMAIL_ID}@bounces.shop.io", None),
        (f"xbounces+{EMAIL_ID}@bounces.shop.io", None),
        ("bounces+not-a-uuid@bounces.shop.io", None),
        (f"bounces+{EMAIL_ID.replace('-', '')}@bounces.shop.io", None),
        (f"bounces+{EMAIL_ID}@a@b", None),
        ("", None),
    ],
)
def test_verp_email_id(address: str, expected: str | None) -> None:
    assert verp_email_id(address) == expected


TAG = "k3m7qz2abcdwxy45"  # 16 characters of lower-case base32, as an HMAC gives them


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (f"bounces+{EMAIL_ID}-{TAG}@bounces.shop.io", EMAIL_ID),
        (f"<BOUNCES+{EMAIL_ID.upper()}-{TAG.upper()}@Bounces.Shop.IO>", EMAIL_ID),
        (f"bounces+{EMAIL_ID}@bounces.shop.io", EMAIL_ID),  # before tags
        (f"bounces+{EMAIL_ID}-{TAG[:15]}@bounces.shop.io", None),
        (f"bounces+{EMAIL_ID}-{TAG}a@bounces.shop.io", None),
        (f"bounces+{EMAIL_ID}-{'1' * 16}@bounces.shop.io", None),  # not base32
        (f"bounces+{EMAIL_ID}{TAG}@bounces.shop.io", None),
        (f"bounces+{EMAIL_ID}-@bounces.shop.io", None),
    ],
)
def test_verp_email_id_with_a_tag(address: str, expected: str | None) -> None:
    assert verp_email_id(address) == expected


def test_a_tagged_return_path_names_the_email() -> None:
    other = "0194a000-0000-7000-8000-000000000001"
    report = parse_report(
        sample("gmail_dsn_no_such_user.eml"), [f"bounces+{other}-{TAG}@bounces.shop.io"]
    )
    assert isinstance(report, Bounce)
    assert report.original_email_id == other
    original = f"Return-Path: <bounces+{EMAIL_ID}-{TAG}@bounces.shop.io>\r\n\r\n"
    block = "Final-Recipient: rfc822; a@x.example\r\nAction: failed\r\nStatus: 5.1.1\r\n"
    report = parse_report(dsn(block, original=original))
    assert isinstance(report, Bounce)
    assert report.original_email_id == EMAIL_ID


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_message_parsed_with_compat32_reads_the_same(name: str) -> None:
    # The inbound listener hands parse_report the tree it parsed with compat32.
    raw = sample(name)
    assert parse_report(raw, (), message_from_bytes(raw)) == parse_report(raw)


@pytest.mark.parametrize(
    ("message_id", "expected"),
    [
        (f"<{EMAIL_ID}@shop.io>", EMAIL_ID),
        (f"  <{EMAIL_ID.upper()}@shop.io>  ", EMAIL_ID),
        (f"{EMAIL_ID}@shop.io", EMAIL_ID),
        (f"<{EMAIL_ID}>", None),
        (f"<{EMAIL_ID}@>", None),
        (f"<x{EMAIL_ID}@shop.io>", None),
        ("<CAPx9Lz8mK2qv+J7vR1Hn=q0wY4tZcB5s3Dd6Ef7Gh8@mail.gmail.com>", None),
        ("", None),
    ],
)
def test_message_email_id(message_id: str, expected: str | None) -> None:
    assert message_email_id(message_id) == expected


# ---------------------------------------------------------------------------------------------
# Auto-replies and threading


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("sieve_vacation_autoreply.eml", True),
        ("exchange_automatic_reply.eml", True),
        ("gmail_dsn_no_such_user.eml", True),  # Auto-Submitted, Return-Path <>
        ("gmail_human_reply.eml", False),
        ("outlook_human_reply.eml", False),  # X-Auto-Response-Suppress alone is no sign
    ],
)
def test_is_auto_reply_on_the_corpus(name: str, expected: bool) -> None:
    assert is_auto_reply(sample(name)) is expected
    assert is_auto_reply(parsed(sample(name))) is expected


HUMAN = (
    "From: Alex <alex@example.net>\r\nTo: orders@shop.io\r\nSubject: Re: Your order\r\n"
    "Return-Path: <alex@example.net>\r\n"
)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ("", False),
        ("Auto-Submitted: no\r\n", False),
        ("Auto-Submitted: auto-replied (vacation)\r\n", True),
        ("Auto-Submitted: Auto-Generated\r\n", True),
        ("X-Autoreply: yes\r\n", True),
        ("X-Autorespond: Out of office\r\n", True),
        ("X-Autoreply: no\r\n", False),
        ("Precedence: bulk\r\n", True),
        ("Precedence: list\r\n", True),
        ("Precedence: junk\r\n", True),
        ("Precedence: auto_reply\r\n", True),
        ("Precedence: first-class\r\n", False),
        ("X-Auto-Response-Suppress: All\r\n", False),
        ("X-Auto-Response-Suppress: All\r\nX-MS-Exchange-Inbox-Rules-Loop: a@b.example\r\n", True),
        ("X-Auto-Response-Suppress: DR, RN, NRN\r\nX-MS-Exchange-Inbox-Rules-Loop: a@b\r\n", False),
        ("X-MS-Exchange-Inbox-Rules-Loop: a@b.example\r\n", False),
    ],
)
def test_is_auto_reply_headers(headers: str, expected: bool) -> None:
    assert is_auto_reply((HUMAN + headers + "\r\nBody\r\n").encode()) is expected


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Automatic reply: Your order", True),
        ("Out of Office: Your order", True),
        ("Abwesenheitsnotiz: Ihre Bestellung", True),
        ("Re: Automatic replies are annoying", False),
    ],
)
def test_x_auto_response_suppress_with_an_auto_reply_subject(subject: str, expected: bool) -> None:
    raw = f"From: a@b.example\r\nSubject: {subject}\r\nX-Auto-Response-Suppress: OOF\r\n\r\nx"
    assert is_auto_reply(raw.encode()) is expected


def test_exchange_oof_without_auto_submitted_still_counts() -> None:
    # Older Exchange servers sent automatic replies without Auto-Submitted.
    message = parsed(sample("exchange_automatic_reply.eml"))
    del message["Auto-Submitted"]
    assert is_auto_reply(message)
    del message["X-MS-Exchange-Inbox-Rules-Loop"]
    del message["x-ms-exchange-generated-message-source"]
    assert is_auto_reply(message)  # the "Automatic reply:" subject is the other sign
    message.replace_header("Subject", "Your receipt from Shop")
    assert not is_auto_reply(message)


def test_null_return_path() -> None:
    assert is_auto_reply(b"Return-Path: <>\r\nFrom: a@b.example\r\n\r\nx")
    assert is_auto_reply(b"Return-Path: < >\r\nFrom: a@b.example\r\n\r\nx")


def test_referenced_message_ids() -> None:
    assert referenced_message_ids(parsed(sample("gmail_human_reply.eml"))) == [
        "<019483a5-11c2-7e09-9f3b-5d6a7c8b9e01@shop.io>",  # In-Reply-To first, not repeated
        "<0194839e-7a25-7d6f-b3c8-e4a1d09f5c2b@shop.io>",
        "<CAPx9Lz8mK2qv+J7vR1Hn=q0wY4tZcB5s3Dd6Ef7Gh8@mail.gmail.com>",
    ]
    message = parsed(
        b"In-Reply-To: Your message of Monday <b@x.example>\r\n"
        b"References: <a@x.example>\r\n <b@x.example>\r\n"
        b"References: bare@x.example\r\n\r\n"
    )
    assert referenced_message_ids(message) == ["<b@x.example>", "<a@x.example>", "<bare@x.example>"]
    assert referenced_message_ids(parsed(b"Subject: hi\r\n\r\n")) == []


# ---------------------------------------------------------------------------------------------
# Never raises


@st.composite
def mutated_samples(draw: st.DrawFn) -> bytes:
    raw = bytearray(draw(st.sampled_from(sorted(SAMPLES.values()))))
    if draw(st.booleans()):
        del raw[draw(st.integers(0, len(raw))) :]
    for _ in range(draw(st.integers(0, 12))):
        if not raw:
            break
        index = draw(st.integers(0, len(raw) - 1))
        match draw(st.sampled_from(["flip", "insert", "delete"])):
            case "flip":
                raw[index] = draw(st.integers(0, 255))
            case "insert":
                raw[index:index] = draw(
                    st.sampled_from([b"\r\n", b"\n\n", b"--", b":", b";", b"<", b">", b"\x00"])
                    | st.binary(max_size=16)
                )
            case _:
                del raw[index : index + draw(st.integers(1, 64))]
    return bytes(raw)


NEVER_RAISES = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def check_never_raises(raw: bytes) -> None:
    report = parse_report(raw, envelope_recipients=["bounces+x@y", "\x00"])
    assert report is None or isinstance(report, Bounce | Complaint)
    assert isinstance(is_auto_reply(raw), bool)
    assert isinstance(referenced_message_ids(parsed(raw)), list)


@NEVER_RAISES
@given(st.binary(max_size=2000))
def test_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    check_never_raises(raw)


@NEVER_RAISES
@given(mutated_samples())
def test_never_raises_on_mutated_samples(raw: bytes) -> None:
    check_never_raises(raw)
