"""The bounce corpora: every message of flufl.bounce's test data and of the Ruby bounce_email
gem's fixtures, each with the address(es) and hard/soft it should give, read by ``parse_report``
and by flufl.bounce side by side (the table is printed; ours must recognise at least as many).

The messages come from the ``bounced`` package (a dev dependency), whose ``tests/`` folder ships
``flufl_bounce/*.eml`` (flufl.bounce's test data, from before flufl.bounce anonymised its copies),
``bounce_email/{bounces,non_bounces}/*.eml`` (bounce_email's fixtures) and ``bounces/*.eml``
(three of its own).

How flufl.bounce is judged: as its own ``tests/test_detectors.py`` judges it, on the addresses
of the kind expected -- its permanent set for a failure, its temporary set for a delay -- from
``all_failures`` on the message parsed as its tests parse it; for a message that is no bounce,
on finding nothing. It has no hard/soft beyond permanent/temporary, so its permanent answer
counts as right for a failure we call soft (a 4.x.x status). mailbridge is judged on the whole
answer: every recipient's address (compared case-insensitively), action and hard/soft.
"""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

import flufl.bounce
import pytest

from mailbridge.mail.inbound_reports import Bounce, Complaint, parse_report

CORPORA = files("bounced") / "tests"

# (address lower-case, action, hard)
Recipient = tuple[str, str, bool]
# The recipients a message should give; NOTHING: it is no bounce, or it names no address to act
# on; COMPLAINT: it is a feedback report (a Complaint, no bounce).
Expected = frozenset[Recipient] | Literal["complaint"]
NOTHING: frozenset[Recipient] = frozenset()
COMPLAINT: Literal["complaint"] = "complaint"


def failed(*addresses: str, hard: bool = True) -> frozenset[Recipient]:
    return frozenset((address.lower(), "failed", hard) for address in addresses)


def delayed(*addresses: str) -> frozenset[Recipient]:
    return frozenset((address.lower(), "delayed", False) for address in addresses)


# flufl.bounce 6.0.0's expectations, from its sdist's tests/test_detectors.py (the DETECTORS
# list: file, detector, addresses, is_temporary -> delayed, else failed; plus test_scan_warning
# and the comments on the files it expects nothing of). Its copies of the messages are
# anonymised (userx@example.com); the messages here are not, so each address is the one at the
# same place in the message as it is here. Files without a DETECTORS entry say why.
FLUFL_BOUNCE: dict[str, Expected] = {
    "aol_01": failed("screenname@aol.com"),  # aol
    "bounce_01": NOTHING,  # not in DETECTORS: a Jetmail bounce whose address list is empty
    "bounce_02": failed("acinsp1@midsouth.rr.com"),  # simplematch
    "bounce_03": failed("james@jeborall.demon.co.uk"),  # simplematch
    "dsn_01": failed("JimmyMcEgypt@go.com"),  # dsn
    # flufl: P (Action: failed); its Status 4.4.7 makes it soft by our rule (see _dsn_reports).
    "dsn_02": failed("zzzzz@zeus.hud.ac.uk", hard=False),  # dsn
    "dsn_03": failed("ddd.kkk@advalvas.be"),  # dsn
    "dsn_04": failed("max.haas@unibas.ch"),  # dsn
    "dsn_05": delayed("pkocmid@atlas.cz"),  # dsn
    "dsn_06": delayed("hao-nghi.au@fr.thalesgroup.com"),  # dsn
    "dsn_07": delayed("david.farrar@parliament.govt.nz"),  # dsn
    "dsn_08": delayed("news-list.zope@localhost.bln.innominate.de"),  # dsn
    "dsn_09": failed("pr@allen-heath.com"),  # dsn
    "dsn_10": failed("anne.person@dom.ain"),  # dsn
    "dsn_11": failed("joem@example.com"),  # dsn
    "dsn_12": failed("auaauqdgrdz@jtc-con.co.jp"),  # dsn
    "dsn_13": failed("marcooherbst@cardinal.com"),  # dsn
    "dsn_14": failed("artboardregistration@home.dk"),  # dsn
    "dsn_15": failed("horu@ccc-ces.com"),  # dsn
    # The returned original carries another DSN (a delay): it is the original, not this report.
    "dsn_16": failed("hishealinghand@pastors.com"),  # dsn
    "dsn_17": delayed("christine.barsas@sivarikeskus.fi"),  # dsn
    "dumbass_01": NOTHING,  # not in DETECTORS: "No addresses are detectable" (InterScan)
    "exim_01": failed("delangen@its.tudelft.nl"),  # exim
    "groupwise_01": failed("thoff@MAINEX1.ASU.EDU"),  # groupwise
    "groupwise_02": failed("omarmo@thebas.com"),  # exchange (groupwise: [], just must not raise)
    "groupwise_03": NOTHING,  # "Not a bounce but has confused groupwise"
    "hotpop_01": failed("allensmithee@hotpop.com"),  # simplematch
    "llnl_01": failed("trotts1@llnl.gov"),  # llnl
    "microsoft_01": failed("DJBENNETT@IKON.COM"),  # exchange
    "microsoft_02": failed("MDMOORE@BALL.COM"),  # exchange
    "microsoft_03": failed("midica@banknbr.com"),  # simplematch
    "netscape_01": failed("aaaaa@corel.com", "bbbbb@corel.com"),  # netscape
    "newmailru_01": failed("zzzzz@newmail.ru"),  # simplematch
    "postfix_01": failed("xxxxx@local.ie"),  # postfix
    "postfix_02": failed("yyyyy@digicool.com"),  # postfix
    "postfix_03": failed("ttttt@ggggg.com"),  # postfix
    "postfix_04": failed("davidlowie@mail1.keftamail.com"),  # postfix
    "postfix_05": failed("bjelf@detectit.net"),  # postfix
    "qmail_01": failed("psadisc@wwwmail.n-h.de"),  # qmail
    "qmail_02": failed("rauschlo@frontfin.com"),  # qmail
    "qmail_03": failed("crown@hbc.co.jp"),  # qmail
    "qmail_04": failed("merotiia@tennisnsw.com.au"),  # qmail
    "qmail_05": failed("ivokggrrdvc@caixaforte.freeservers.com"),  # qmail
    "qmail_06": failed("ntl@xxx.com"),  # qmail
    "qmail_07": failed("user@example.net"),  # qmail
    "qmail_08": NOTHING,  # qmail: [] -- an auto-reply
    "sendmail_01": failed("zzzzz@shaft.coal.nl", "zzzzz@nfg.nl"),  # simplematch
    "simple_01": failed("bbbsss@turbosport.com"),  # simplematch
    "simple_02": failed("chris.ggggmmmm@usa.net"),  # simplematch
    "simple_03": delayed("jacobus@geo.co.za"),  # simplewarning; also test_scan_warning
    "simple_04": failed("claird@starbase.neosoft.com"),  # simplematch
    "simple_05": failed("rlosardo@sbcglobal.net"),  # simplematch
    "simple_06": failed("dlyle@hamiltonpacific.com"),  # simplematch
    "simple_07": failed("william.xxxx@sbcglobal.net"),  # simplematch
    # simple_08, 09, 16 and 32 have a hyphen in the domain, which flufl.bounce's address check
    # (SimpleMatch's VALID) refuses; its own anonymised copies (example.de) have none.
    "simple_08": failed("severin.XXX@t-online.de"),  # simplematch
    "simple_09": failed("RobotMail@auto-walther.de"),  # simplematch
    "simple_10": failed("sais@thehartford.com"),  # simplematch
    "simple_11": failed("carlosr73@hartfordlife.com"),  # simplematch
    "simple_12": failed("charrogar@rhine1.andrew.ac.jp"),  # simplematch
    "simple_13": failed("dycusibreix@ademe.fr"),  # simplematch
    "simple_14": failed("dump@dachamp.com", "iqxwmmfauudpo@dachamp.com"),  # simplematch
    "simple_15": failed("isam@kviv.be"),  # simplematch
    "simple_16": failed("xvlogtfsei@the-messenger.com"),  # simplematch
    "simple_17": failed("internetsailing@gmail.com"),  # simplematch
    "simple_18": failed("powell@kesslersupply.com"),  # simplematch
    "simple_19": failed("mcfall@cepi.com.ar"),  # simplematch
    "simple_20": failed("duke@ald.socgen.com"),  # simplematch
    "simple_21": delayed("assumpeatman@dsgmfg.com"),  # simplewarning
    "simple_22": delayed("RLipton@prev.org"),  # simplewarning
    "simple_23": failed("ketchuy@dadoservice.it"),  # simplematch
    "simple_24": failed("liberty@gomaps.com"),  # simplematch
    "simple_25": failed("mahau@cnbearing.com"),  # simplematch
    "simple_26": failed("reilizavet@lar.ieo.it"),  # simplematch
    # MDaemon's subject says "Warning: ... User unknown!", its text "no such user here": a failure.
    "simple_27": failed("kulp@webmail.pla.net.py"),  # simplematch
    "simple_28": delayed("luis.hiam@gmail.com"),  # simplewarning
    "simple_29": failed("thilakayi_bing@landshire.com"),  # simplematch
    "simple_30": failed("wmnqicorpat@nqicorp.com"),  # simplematch
    "simple_31": failed("nmorel@actisce.fr"),  # simplematch
    "simple_32": failed("teteyn@agence-forbin.com"),  # simplematch
    "simple_33": failed("hmu@extralumin.com"),  # simplematch
    "simple_34": failed("roland@xxx.com"),  # simplematch
    "simple_35": delayed("calvin@xxx.com"),  # simplewarning
    "simple_36": failed("garyt@xxx.com"),  # simplematch
    "simple_37": failed("user@uci.edu"),  # simplematch
    "simple_38": failed("prueba@domain.com"),  # simplematch
    "simple_39": failed("foo@mail.ru"),  # simplematch
    "simple_40": delayed("user@example.com"),  # simplewarning
    "simple_41": failed("jeff.chan@intercitytime.com"),  # simplematch
    "sina_01": failed("boboman76@sina.com", "alan_t18@sina.com"),  # sina
    "smtp32_01": failed("oliver@pcworld.com.ph"),  # smtp32
    "smtp32_02": failed("lists@mail.spicynoodles.com"),  # smtp32
    "smtp32_03": failed("borisk@gw.xraymedia.com"),  # smtp32
    "smtp32_04": failed("after_another@pacbell.net", "one_bad_address@pacbell.net"),  # smtp32
    "smtp32_05": failed("jmrpowersports@jmrpowersports.com"),  # smtp32
    "smtp32_06": failed("Absolute_garbage_addr@pacbell.net"),  # smtp32
    "smtp32_07": failed("info@husbyran.com"),  # smtp32
    "yahoo_01": failed("subscribe.motorcycles@listsociety.com"),  # yahoo
    "yahoo_02": failed("agarciamartiartu@yahoo.es"),  # yahoo
    "yahoo_03": failed("cresus22@yahoo.com"),  # yahoo
    "yahoo_04": failed("agarciamartiartu@yahoo.es", "open00now@yahoo.co.uk"),  # yahoo
    "yahoo_05": failed("cresus22@yahoo.com", "jjb700@yahoo.com"),  # yahoo
    "yahoo_06": failed(
        "andrew_polevoy@yahoo.com",
        "baruch_sterin@yahoo.com",
        "rjhoeks@yahoo.com",
        "tritonrugger91@yahoo.com",
    ),  # yahoo
    "yahoo_07": failed(
        "mark1960_1998@yahoo.com",
        "ovchenkov@yahoo.com",
        "tsa412@yahoo.com",
        "vaxheadroom@yahoo.com",
    ),  # yahoo
    "yahoo_08": failed(
        "chatrathis@yahoo.com",
        "crownjules01@yahoo.com",
        "cwl_999@yahoo.com",
        "eichaiwiu@yahoo.com",
        "rjhoeks@yahoo.com",
        "yuli_kolesnikov@yahoo.com",
    ),  # yahoo
    "yahoo_09": failed("hankel_o_fung@yahoo.com", "ultravirus2001@yahoo.com"),  # yahoo
    "yahoo_10": failed(
        "jajcchoo@yahoo.com", "lyons94706@yahoo.com", "turtle4jne@yahoo.com"
    ),  # yahoo
    "yahoo_11": failed("bad_user@aol.com"),  # yahoo
    "yale_01": failed("thomas.dtankengine@cs.yale.edu", "thomas.dtankengine@yale.edu"),  # yale
}

# bounce_email's fixtures. Its tests (test/bounce_email_test.rb) say only that each of
# bounces/ is a bounce and none of non_bounces/ is, and give a few codes and types
# (tt_bounce_01 hard 5.1.2; tt_bounce_10 soft 4.0.0; unknown_code_bounce_01 hard): the addresses
# and the rest were read from each message. A DSN's recipient is its Original-Recipient when it
# is of type rfc822 (tt_bounce_16: sent to notikums@, forwarded to jekaterina@), else its
# Final-Recipient; failed with a 5.x.x status (or none) is hard, with 4.x.x soft.
BOUNCE_EMAIL: dict[str, Expected] = {
    # An ARF abuse report (SocketLabs), filed among the bounces: a complaint, naming nobody.
    "bounce-auto-respond": COMPLAINT,
    # qmail: "This is a permanent error" for <mithlesh_pm@rediffmail.com>.
    "malformed_bounce_01": failed("mithlesh_pm@rediffmail.com"),
    # Postfix and Domino DSNs: Action failed, Status 5.x.x.
    "tt_1234175799": failed("agris.ameriks@amerimailzzz.lv"),
    "tt_1234177688": failed("aaaaagggrrriiiizz@inbox.lv"),
    "tt_1234210655": failed("this_doesnotexistinAAc@accenture.com"),
    "tt_1234211357": failed("agris.ameriksNEEXISTEE@gmail.com"),
    "tt_1234211929": failed("jekaterina@tv5.lv"),
    "tt_1234211931": failed("info.rietumuradio.lv@mail.studio7.lv"),
    "tt_1234211932": failed("dace.balode@rigasvilni.lv"),
    "tt_1234241665": failed("annas@sfl.lv"),
    "tt_1234285532": failed("doesntexistthisemaill@yahoo.com"),
    "tt_1234285668": failed("agrisa@one.lv"),
    # Exim text bounces: "Unrouteable mail domain" (bounce_email: 5.1.2, hard).
    "tt_bounce_01": failed("thornborrow@connect4free.net"),
    "tt_bounce_02": failed("thornborrow@connect4free.net"),
    # DSNs: Action failed, Status 5.0.0.
    "tt_bounce_03": failed("agrisa@apollo.lv"),
    "tt_bounce_04": failed("agrisa@apollo.lv"),
    "tt_bounce_05": failed("evor@apollo.lv"),
    # Gmail: "Delivery to the following recipient failed permanently".
    "tt_bounce_06": failed("info@koblenz.lv"),
    "tt_bounce_07": failed("ilona.kalnina@citrus.lv"),  # DSN, 5.0.0
    "tt_bounce_08": failed("jauatkales@gmial.com"),
    "tt_bounce_09": failed("gintsgrube@pop.ml.lv"),
    # DSN: Action failed, Status 4.0.0 (bounce_email: soft).
    "tt_bounce_10": failed("info.rietumuradio.lv@mail.studio7.lv", hard=False),
    # Exchange 5.5: names the recipient it could not reach only by a display name (an X.400
    # recipient), so there is no address to act on; neither reader invents one.
    "tt_bounce_11": NOTHING,
    # Gmail: "Delivery to the following recipient has been delayed".
    "tt_bounce_12_soft": delayed("info@radioliepaja.lv"),
    "tt_bounce_13": failed("ilzeB@lvaei.lv"),  # DSN, 5.2.2
    "tt_bounce_14": failed("jolanta_putnina@ogreszinas.lv"),  # qmail, permanent
    "tt_bounce_15": failed("info@rimibaltic.com"),  # Domino DSN, 5.0.0
    "tt_bounce_16": failed("notikums@tv5.lv"),  # DSN, 5.2.3, the Original-Recipient
    "tt_bounce_17": failed("agris.brivers@motosports.lv"),  # qmail, permanent
    "tt_bounce_18": delayed("welcome6_@one.lv"),  # Gmail, delayed
    "tt_bounce_19": delayed("26461101@sms.id.lv"),  # Gmail, delayed
    "tt_bounce_20": failed("26461101@sms.id.lv"),  # Gmail, failed permanently
    "tt_bounce_21": failed("kasparsramins@gmail.com"),  # Gmail, failed permanently
    "tt_bounce_22": failed("flughafentransfer@loackertours.at"),  # Gmail, failed permanently
    "tt_bounce_23": failed("Rihards_Freimanis@exigengroup.com"),  # sendmail DSN, 5.1.1
    "tt_bounce_24": failed("customer.testemail@test-receive-domain.se"),  # Exchange DSN, 5.1.1
    "tt_bounce_25": failed("Delar-Med-Frun@live.se"),  # qmail, permanent
    "undeliverable_gmail": failed("undeliverable@coupa.com"),  # Gmail, failed permanently
    # A DSN's recipient fields among its own headers; "has failed due to a full mailbox" after
    # days of attempts (bounce_email: hard, code unknown).
    "unknown_code_bounce_01": failed("sdrake@tradingpost.ch"),
    # non_bounces/: out-of-office replies and a newsletter.
    "tt_1234210666": NOTHING,
    "tt_1234211024": NOTHING,
    "tt_1234241664": NOTHING,
}

# The bounced package's own three (its test_bounced.py gives the address and status of each;
# the recipient is the Original-Recipient, rfc822-typed, where Final-Recipient is LOCAL-typed).
BOUNCED: dict[str, Expected] = {
    "empty-status": failed("recipient@example.com"),  # Action failed, empty Status
    "local-address": failed("recipient@example.com", hard=False),  # Action failed, 4.0.0
    "longer-status": failed("joem@example.com"),  # Action failed, 5.1.10 (eleven times)
}

# The nine messages of flufl.bounce 6.0.0's test data that the bounced package lacks (newer
# than its copy), as flufl.bounce ships them (anonymised), in tests/fixtures/flufl_bounce_6
# with flufl.bounce's LICENSE (Apache-2.0). Expectations from its DETECTORS list.
FLUFL_BOUNCE_6 = Path(__file__).resolve().parents[1] / "fixtures" / "flufl_bounce_6"
FLUFL_BOUNCE_NEWER: dict[str, Expected] = {
    "caiwireless_01": failed("userx@example.com"),  # caiwireless
    "dsn_18": failed("email@replaced.net"),  # dsn
    "microsoft_04": failed("userx@example.com"),  # microsoft
    # DETECTORS expects nothing of SimpleMatch alone; its DSN part names the recipient as
    # the list archive it was copied from obfuscated it ("david...@gmail.com"), and both
    # readers give that address as written (it can never be a recipient of an email).
    "simple_42": failed("david...@gmail.com"),
    "simple_43": NOTHING,  # simplematch: no address
    "simple_44": failed("user@example.com"),  # simplematch
    "simple_45": failed("subscriber@earthlink.net"),  # simplematch
    "yahoo_12": failed("user@yahoo.com"),  # simplematch
    "yahoo_13": failed("bogus-address@example.net"),  # yahoo
}

CORPUS_TABLES: dict[str, tuple[tuple[str | Path, ...], dict[str, Expected]]] = {
    "flufl.bounce": (("flufl_bounce",), FLUFL_BOUNCE),
    "flufl.bounce 6, not in bounced": ((FLUFL_BOUNCE_6,), FLUFL_BOUNCE_NEWER),
    "bounce_email": (("bounce_email/bounces", "bounce_email/non_bounces"), BOUNCE_EMAIL),
    "bounced": (("bounces",), BOUNCED),
}


def messages(folders: tuple[str | Path, ...]) -> Iterator[tuple[str, bytes]]:
    for folder in folders:
        directory: Traversable = CORPORA
        if isinstance(folder, Path):
            directory = folder
        else:
            for name in folder.split("/"):
                directory = directory / name
        for entry in sorted(directory.iterdir(), key=lambda each: each.name):
            if entry.name.endswith(".eml"):
                yield entry.name.removesuffix(".eml"), entry.read_bytes()


def ours(raw: bytes) -> Expected:
    report = parse_report(raw)
    if isinstance(report, Complaint):
        return COMPLAINT
    if isinstance(report, Bounce):
        return frozenset(
            (each.address.lower(), each.action or "", each.hard) for each in report.recipients
        )
    return NOTHING


def flufl_failures(raw: bytes) -> tuple[frozenset[str], frozenset[str]] | None:
    """flufl.bounce's (temporary, permanent) addresses, lower-case; None when it raised."""
    try:
        temporary, permanent = flufl.bounce.all_failures(message_from_bytes(raw))
    except Exception:
        return None
    return (
        frozenset(each.decode("ascii", "replace").lower() for each in temporary),
        frozenset(each.decode("ascii", "replace").lower() for each in permanent),
    )


def flufl_is_right(expected: Expected, found: tuple[frozenset[str], frozenset[str]] | None) -> bool:
    if found is None:
        return False
    temporary, permanent = found
    if expected == COMPLAINT or not expected:
        return not temporary and not permanent
    (action,) = {action for _, action, _ in expected}
    return (permanent if action == "failed" else temporary) == {item[0] for item in expected}


def shown(answer: Expected) -> str:
    if answer == COMPLAINT:
        return "complaint"
    if not answer:
        return "-"
    return ", ".join(
        f"{address} {action}{'' if action == 'delayed' else ' hard' if hard else ' soft'}"
        for address, action, hard in sorted(answer)
    )


def shown_flufl(found: tuple[frozenset[str], frozenset[str]] | None) -> str:
    if found is None:
        return "(raised)"
    temporary, permanent = found
    answers = [f"{address} permanent" for address in sorted(permanent)]
    answers += [f"{address} temporary" for address in sorted(temporary)]
    return ", ".join(answers) or "-"


def test_every_expectation_names_one_message_of_one_action() -> None:
    for folders, table in CORPUS_TABLES.values():
        assert {name for name, _ in messages(folders)} == set(table)
        for expected in table.values():
            if expected != COMPLAINT and expected:
                assert len({action for _, action, _ in expected}) == 1


@pytest.mark.parametrize("corpus", sorted(CORPUS_TABLES))
def test_corpus_side_by_side_with_flufl_bounce(
    corpus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folders, table = CORPUS_TABLES[corpus]
    rows: list[str] = []
    wrong: list[str] = []
    right = flufl_right = 0
    for name, raw in messages(folders):
        expected, answer, found = table[name], ours(raw), flufl_failures(raw)
        flufl_ok = flufl_is_right(expected, found)
        right += answer == expected
        flufl_right += flufl_ok
        if answer != expected:
            wrong.append(f"{name}: expected {shown(expected)}, got {shown(answer)}")
        rows.append(
            f"{name:<22} | {shown(expected):<42} | {'ok' if answer == expected else 'NO'} "
            f"{shown(answer):<42} | {'ok' if flufl_ok else 'NO'} {shown_flufl(found)}"
        )
    total = len(rows)
    summary = (
        f"{corpus} corpus: mailbridge recognised {right}/{total} with the right address and "
        f"hard/soft; flufl.bounce {flufl_right}/{total}"
    )
    header = f"{'file':<22} | {'expected':<42} | {'mailbridge':<45} | flufl.bounce"
    with capsys.disabled():
        print("\n".join(["", summary, header, *rows, summary]))
    assert not wrong, "\n".join([summary, *wrong])
    assert right >= flufl_right, summary
    assert total == len(table) > 0


@pytest.mark.parametrize("corpus", sorted(CORPUS_TABLES))
def test_the_compat32_tree_the_listener_parses_reads_the_same(corpus: str) -> None:
    folders, _ = CORPUS_TABLES[corpus]
    for name, raw in messages(folders):
        assert parse_report(raw, (), message_from_bytes(raw)) == parse_report(raw), name
