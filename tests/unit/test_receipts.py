"""Handover receipts: filed in a memory-mapped ring, found by email and attempt."""

from __future__ import annotations

from pathlib import Path

from mailbridge.mail.providers import receipts
from mailbridge.mail.providers.receipts import ReceiptBook, receipt_filed


def test_a_filed_receipt_is_found_by_email_and_attempt(tmp_path: Path) -> None:
    book = ReceiptBook(tmp_path, "runner-1")
    book.file("email-a", 1)
    book.file("email-b", 12)
    assert receipt_filed(tmp_path, "runner-1", "email-a", 1) is True
    assert receipt_filed(tmp_path, "runner-1", "email-b", 12) is True
    assert receipt_filed(tmp_path, "runner-1", "email-b", 1) is False  # another attempt
    assert receipt_filed(tmp_path, "runner-1", "email-c", 1) is False
    assert receipt_filed(tmp_path, "runner-2", "email-a", 1) is None  # no book: no evidence
    book.close()


def test_receipts_outlive_the_book_that_filed_them(tmp_path: Path) -> None:
    book = ReceiptBook(tmp_path, "runner-1")
    book.file("email-a", 3)
    del book  # like a killed process: the mapping goes, the pages stay in the file
    assert receipt_filed(tmp_path, "runner-1", "email-a", 3) is True


def test_a_record_is_only_found_where_a_slot_starts(tmp_path: Path) -> None:
    book = ReceiptBook(tmp_path, "runner-1")
    book.file("x email-a 1", 1)  # contains "email-a 1" but not at a slot's start
    assert receipt_filed(tmp_path, "runner-1", "email-a", 1) is False
    book.close()


def test_the_ring_reuses_its_oldest_slots(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(receipts, "SLOTS", 4)
    book = ReceiptBook(tmp_path, "runner-1")
    for number in range(6):
        book.file(f"email-{number}", 1)
    found = [receipt_filed(tmp_path, "runner-1", f"email-{n}", 1) for n in range(6)]
    assert found == [False, False, True, True, True, True]
    assert (tmp_path / "runner-1.receipts").stat().st_size == 4 * receipts.SLOT
    book.close()


def test_a_withdrawn_receipt_is_no_longer_found(tmp_path: Path) -> None:
    book = ReceiptBook(tmp_path, "runner-1")
    kept = book.file("email-a", 1)
    withdrawn = book.file("email-b", 1)
    assert (kept, withdrawn) == (0, 1)
    book.withdraw(withdrawn)
    assert receipt_filed(tmp_path, "runner-1", "email-a", 1) is True
    assert receipt_filed(tmp_path, "runner-1", "email-b", 1) is False
    book.close()
